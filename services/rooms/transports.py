"""How a reply leaves by a person's line. `Recording` is the adapter for development and
tests: it records each outbound message on the ROOMS stream (`rooms.outbound.<transport>.
<org>`) exactly once per stored message, where a real adapter would call the carrier, and
answers an id for it as a carrier would, which the carrier's status callbacks then name."""

from typing import Protocol

import msgspec

from libs.contracts import codec
from services.rooms.domain.deliveries import carrier_id
from services.rooms.domain.threads import Answering
from services.rooms.store import RoomStore

__all__ = ["Outbound", "Recording", "Transport"]


class Outbound(msgspec.Struct, frozen=True):
    """A stored message leaving by the line `sender` to `to`. The carrier shows the
    person's address; our record keeps who wrote it (hip-0524 §7). `key` names a message
    that is no room's (a line's code): it leaves once per key. An `automatic` one (the
    agent's, sent unattended) leaves marked so where its carrier can say it: an email's
    `Auto-Submitted: auto-replied` (RFC 3834 §5)."""

    transport: str
    org: str
    room: str
    seq: int
    sender: str
    to: str
    text: str
    author_kind: str
    on_behalf_of: str | None
    key: str = ""
    automatic: bool = False
    answering: Answering | None = None  # an email's headers as a reply in its thread


class Transport(Protocol):
    async def send(self, message: Outbound) -> str:
        """Hand `message` to the carrier; its id for it."""
        ...


class Recording:
    def __init__(self, store: RoomStore) -> None:
        self._store = store

    async def send(self, message: Outbound) -> str:
        key = message.key or f"{message.room}-{message.seq}"
        await self._store.record_outbound(
            message.transport, message.org, codec.encode(message), msg_id=key
        )
        return carrier_id(message.transport, key)
