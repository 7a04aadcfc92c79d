"""The AUDIT stream, which only this service's credential may publish to."""

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import APIError, NotFoundError

from libs.audit.chain import Link, follow, record_hash
from libs.audit.reading import stored
from libs.contracts.audit import AuditRecord
from libs.contracts.streams import AUDIT, audit_subject
from libs.runtime.kv import Conflict
from libs.runtime.service import ensure_stream

__all__ = ["ChainStore", "open_store"]

# The server says a subject moved with either code, by version (with or without the number).
_WRONG_LAST_SEQUENCE = (10071, 10164)
_decode = msgspec.json.Decoder(AuditRecord).decode


class ChainStore:
    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def tail(self, org: str) -> tuple[int, Link]:
        """The stream sequence of the org's last message (0: none) and the link after it.

        A last message that is a sealed record of this org is trusted as the chain's end;
        anything else there means walking the chain to know the link it breaks."""
        try:
            last = await self._js.get_last_msg(AUDIT.name, audit_subject(org), direct=True)
        except NotFoundError:
            return 0, Link()
        try:
            record = _decode(last.data or b"")
            if record.org == org and record.hash == record_hash(record):
                return last.seq, Link(record.n, record.hash)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        link = Link()
        async for _, raw in stored(self._js, org):
            link, _ = follow(link, raw, org=org)
        return last.seq, link

    async def hash_after(self, org: str, seq: int) -> str | None:
        """The hash of the org's first message after stream sequence `seq`, as the
        stream's leader holds it: a record's, "" for anything else, None if none is yet."""
        try:
            found = await self._js.get_msg(AUDIT.name, seq + 1, audit_subject(org), next=True)
        except NotFoundError:
            return None
        try:
            return _decode(found.data or b"").hash
        except (msgspec.DecodeError, msgspec.ValidationError):
            return ""

    async def at(self, seq: int) -> AuditRecord:
        """The record at stream sequence `seq`, as the stream's leader holds it."""
        found = await self._js.get_msg(AUDIT.name, seq)
        return _decode(found.data or b"")

    async def append(
        self, record: AuditRecord, *, after_seq: int, msg_id: str | None = None
    ) -> tuple[int, bool]:
        """Publish `record` only if the org's subject still ends at `after_seq`: its seq,
        and False. Under a `msg_id` the stream already holds (within its duplicate window),
        nothing is stored: the seq of what was, and True."""
        headers = {"Nats-Expected-Last-Subject-Sequence": str(after_seq)}
        if msg_id is not None:
            headers["Nats-Msg-Id"] = msg_id
        try:
            ack = await self._js.publish(
                audit_subject(record.org), msgspec.json.encode(record), headers=headers
            )
        except APIError as exc:
            if exc.err_code in _WRONG_LAST_SEQUENCE:
                raise Conflict(record.org) from exc
            raise
        return ack.seq, bool(ack.duplicate)


async def open_store(js: JetStreamContext, *, replicas: int = 1) -> ChainStore:
    await ensure_stream(js, AUDIT, replicas=replicas)
    return ChainStore(js)
