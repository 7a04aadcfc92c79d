"""Sealing and checking hash chains. Pure: no I/O.

A chain is what is stored on an org's subject, in order. A valid record names the hash of
the link before it; anything stored there that is not a valid next record (a forgery, a
replay, bytes that are not a record) is a break, reported by its stream sequence, and the
chain goes on over its raw bytes: the next record names their SHA-256. So nothing stored on
the subject can stop the org's writes, and nothing can be slipped in unseen.
"""

import hashlib
from collections.abc import Iterable

import msgspec

from libs.contracts.audit import GENESIS, AuditRecord

__all__ = ["Break", "Link", "breaks", "follow", "record_hash", "seal"]

_canonical = msgspec.json.Encoder(order="sorted")
_decode = msgspec.json.Decoder(AuditRecord).decode


class Link(msgspec.Struct, frozen=True):
    """Where a chain ends: the `n` of its last valid record and the hash the next names."""

    n: int = 0
    hash: str = GENESIS


class Break(msgspec.Struct, frozen=True):
    """A stored message that is not a valid link of its org's chain, and why."""

    seq: int
    reason: str


def record_hash(record: AuditRecord) -> str:
    as_dict = msgspec.to_builtins(record)
    del as_dict["hash"]
    return hashlib.sha256(_canonical.encode(as_dict)).hexdigest()


def seal(record: AuditRecord, *, after: Link) -> AuditRecord:
    """`record` placed after `after`, with its hash set."""
    placed = msgspec.structs.replace(record, n=after.n + 1, prev=after.hash, hash="")
    return msgspec.structs.replace(placed, hash=record_hash(placed))


def follow(link: Link, raw: bytes, *, org: str) -> tuple[Link, str | None]:
    """The chain after one stored message, and why that message breaks it (None if not)."""
    try:
        record = _decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        reason = f"not an audit record: {exc}"
    else:
        reason = _wrong(record, link, org)
        if reason is None:
            return Link(record.n, record.hash), None
    return Link(link.n, hashlib.sha256(raw).hexdigest()), reason


def breaks(stored: Iterable[tuple[int, bytes]], *, org: str) -> tuple[int, list[Break]]:
    """Walk `(seq, raw)` in order: how many valid records, and every break."""
    link, found = Link(), []
    for seq, raw in stored:
        link, reason = follow(link, raw, org=org)
        if reason is not None:
            found.append(Break(seq, reason))
    return link.n, found


def _wrong(record: AuditRecord, link: Link, org: str) -> str | None:
    if record.org != org:
        return f"a record of org {record.org!r} in the chain of {org!r}"
    if record.n != link.n + 1:
        return f"expected record {link.n + 1}, found {record.n}"
    if record.prev != link.hash:
        return "prev does not name the hash of the message before it"
    if record.hash != record_hash(record):
        return "hash does not match the record's content"
    return None
