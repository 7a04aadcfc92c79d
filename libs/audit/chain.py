"""Sealing and checking hash chains. Pure: no I/O."""

import hashlib
from collections.abc import Iterable

import msgspec

from libs.contracts.audit import GENESIS, AuditRecord

__all__ = ["Break", "first_break", "record_hash", "seal"]

_canonical = msgspec.json.Encoder(order="sorted")


class Break(msgspec.Struct, frozen=True):
    """The first record where a chain stops holding, and why."""

    n: int
    reason: str


def record_hash(record: AuditRecord) -> str:
    unsealed = msgspec.structs.replace(record, hash="")
    as_dict = msgspec.to_builtins(unsealed)
    del as_dict["hash"]
    return hashlib.sha256(_canonical.encode(as_dict)).hexdigest()


def seal(record: AuditRecord, *, after: AuditRecord | None) -> AuditRecord:
    """`record` placed after `after` (None: first in its org's chain), with its hash set."""
    placed = msgspec.structs.replace(
        record,
        n=1 if after is None else after.n + 1,
        prev=GENESIS if after is None else after.hash,
        hash="",
    )
    return msgspec.structs.replace(placed, hash=record_hash(placed))


def first_break(records: Iterable[AuditRecord]) -> Break | None:
    """Walk a chain in order; name the first record that does not follow from the last."""
    prev, expected_n, org = GENESIS, 1, None
    for record in records:
        org = org or record.org
        if record.org != org:
            return Break(record.n, f"record of org {record.org!r} in the chain of {org!r}")
        if record.n != expected_n:
            return Break(record.n, f"expected record {expected_n}, found {record.n}")
        if record.prev != prev:
            return Break(record.n, "prev does not name the previous record's hash")
        if record.hash != record_hash(record):
            return Break(record.n, "hash does not match the record's content")
        prev, expected_n = record.hash, expected_n + 1
    return None
