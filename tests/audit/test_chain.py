"""Sealing and checking a chain, without any server."""

import hashlib
from datetime import UTC, datetime

import msgspec

from libs.audit.chain import Break, Link, breaks, follow, record_hash, seal
from libs.contracts.audit import GENESIS, AuditRecord

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _draft(action: str) -> AuditRecord:
    return AuditRecord(org="acme", n=0, at=AT, service="poa", actor=None, action=action)


def _chain(length: int) -> list[AuditRecord]:
    records: list[AuditRecord] = []
    for i in range(length):
        after = Link(records[-1].n, records[-1].hash) if records else Link()
        records.append(seal(_draft(f"act.{i}"), after=after))
    return records


def _stored(records: list[AuditRecord]) -> list[tuple[int, bytes]]:
    return [(seq, msgspec.json.encode(r)) for seq, r in enumerate(records, start=1)]


def test_the_first_record_names_sixty_four_zeros():
    first = seal(_draft("act"), after=Link())
    assert (first.n, first.prev) == (1, GENESIS)
    assert first.prev == "0" * 64


def test_each_record_names_the_hash_of_the_one_before():
    one, two, three = _chain(3)
    assert (two.prev, three.prev) == (one.hash, two.hash)
    assert [r.n for r in (one, two, three)] == [1, 2, 3]


def test_the_hash_is_sha256_of_the_sorted_json_without_the_hash():
    record = seal(_draft("act"), after=Link())
    body = msgspec.to_builtins(record)
    del body["hash"]
    expected = hashlib.sha256(msgspec.json.encode(body, order="sorted")).hexdigest()
    assert record.hash == record_hash(record) == expected


def test_an_intact_chain_has_no_break():
    assert breaks(_stored(_chain(5)), org="acme") == (5, [])


def test_an_edited_record_is_a_break_at_its_sequence():
    chain = _chain(5)
    chain[2] = msgspec.structs.replace(chain[2], action="something else")
    _, found = breaks(_stored(chain), org="acme")
    assert found[0] == Break(3, "hash does not match the record's content")


def test_a_removed_record_breaks_the_chain_where_it_was():
    chain = _chain(5)
    del chain[1]
    assert breaks(_stored(chain), org="acme")[1][0] == Break(2, "expected record 2, found 3")


def test_bytes_that_are_not_a_record_break_the_chain_and_the_next_record_chains_over_them():
    chain = _chain(2)
    junk = b'{"forged": true}'
    link, reason = follow(Link(chain[-1].n, chain[-1].hash), junk, org="acme")
    after = seal(_draft("goes on"), after=link)
    stored = [*_stored(chain), (3, junk), (4, msgspec.json.encode(after))]
    valid, found = breaks(stored, org="acme")
    assert (after.n, after.prev) == (3, hashlib.sha256(junk).hexdigest())
    assert valid == 3
    assert [b.seq for b in found] == [3]
    assert reason is not None and reason.startswith("not an audit record")


def test_a_record_of_another_org_is_a_break():
    other = seal(msgspec.structs.replace(_draft("x"), org="evil"), after=Link())
    assert breaks(_stored([other]), org="acme") == (
        0,
        [Break(1, "a record of org 'evil' in the chain of 'acme'")],
    )
