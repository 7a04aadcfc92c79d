"""Reading an org's chain back from the AUDIT stream, as stored."""

from collections.abc import AsyncIterator

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from libs.contracts.audit import AuditRecord
from libs.contracts.streams import AUDIT, audit_subject

__all__ = ["records", "stored"]

_decode = msgspec.json.Decoder(AuditRecord).decode


async def stored(js: JetStreamContext, org: str) -> AsyncIterator[tuple[int, bytes]]:
    """`(stream sequence, raw bytes)` of everything on the org's subject, oldest first."""
    seq, subject = 0, audit_subject(org)
    while True:
        try:
            msg = await js.get_msg(AUDIT.name, seq=seq + 1, subject=subject, next=True)
        except NotFoundError:
            return
        seq = msg.seq
        yield seq, msg.data or b""


async def records(js: JetStreamContext, org: str) -> list[AuditRecord]:
    """The org's records as stored; what is not a record is left out (`breaks` names it)."""
    found = []
    async for _, raw in stored(js, org):
        try:
            found.append(_decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return found
