"""Sealing and checking a chain, without any server."""

from datetime import UTC, datetime

import msgspec

from libs.audit.chain import Break, first_break, record_hash, seal
from libs.contracts.audit import GENESIS, AuditRecord

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _draft(action: str) -> AuditRecord:
    return AuditRecord(org="acme", n=0, at=AT, service="poa", actor=None, action=action)


def _chain(length: int) -> list[AuditRecord]:
    records: list[AuditRecord] = []
    for i in range(length):
        records.append(seal(_draft(f"act.{i}"), after=records[-1] if records else None))
    return records


def test_the_first_record_names_sixty_four_zeros():
    first = seal(_draft("act"), after=None)
    assert (first.n, first.prev) == (1, GENESIS)
    assert first.prev == "0" * 64


def test_each_record_names_the_hash_of_the_one_before():
    one, two, three = _chain(3)
    assert (two.prev, three.prev) == (one.hash, two.hash)
    assert [r.n for r in (one, two, three)] == [1, 2, 3]


def test_the_hash_is_sha256_of_the_sorted_json_without_the_hash():
    import hashlib

    record = seal(_draft("act"), after=None)
    body = msgspec.to_builtins(record)
    del body["hash"]
    expected = hashlib.sha256(msgspec.json.encode(body, order="sorted")).hexdigest()
    assert record.hash == record_hash(record) == expected


def test_an_intact_chain_has_no_break():
    assert first_break(_chain(5)) is None


def test_an_edited_record_is_the_first_break():
    chain = _chain(5)
    chain[2] = msgspec.structs.replace(chain[2], action="something else")
    assert first_break(chain) == Break(3, "hash does not match the record's content")


def test_a_removed_record_breaks_the_chain_where_it_was():
    chain = _chain(5)
    del chain[1]
    assert first_break(chain) == Break(3, "expected record 2, found 3")


def test_a_resealed_record_still_breaks_the_link_after_it():
    chain = _chain(4)
    forged = msgspec.structs.replace(chain[1], action="forged", hash="")
    chain[1] = msgspec.structs.replace(forged, hash=record_hash(forged))
    assert first_break(chain) == Break(3, "prev does not name the previous record's hash")
