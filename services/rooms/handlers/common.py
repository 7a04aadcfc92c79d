"""What every rooms handler shares: the way every message is stored (then streamed,
announced, and sent out by a line where it leaves), and the way into a room, a message or a
draft, each starting from the caller."""

from collections.abc import Callable
from datetime import datetime

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import rooms
from libs.contracts.base import home_org
from libs.contracts.principal import Principal
from libs.contracts.problem import KeyReused, Refused
from libs.runtime import pages
from services.rooms.domain import calls, deliveries, drafts, lines, members, messages, threads
from services.rooms.sealing import Sealer
from services.rooms.store import RoomStore, StoredLine
from services.rooms.transports import Outbound, Transport

__all__ = ["Rooms", "draft_holders", "leaves", "person_of"]

# The lines whose correspondents opt out: a text's STOP, an email's complaint or unsubscribe.
_OPTING = ("sms", "email")

Clock = Callable[[], datetime]


class Rooms:
    def __init__(
        self,
        nc: Client,
        store: RoomStore,
        trail: Trail,
        sealer: Sealer,
        transport: Transport,
        clock: Clock,
        *,
        speak_within: float = calls.SPEAK_WITHIN_S,
    ) -> None:
        self._nc, self._store, self._trail = nc, store, trail
        self._sealer, self._transport, self._clock = sealer, transport, clock
        self._speak_within = speak_within

    async def _store_message(
        self,
        room: rooms.Room,
        message: rooms.Message,
        *,
        msg_id: str | None = None,
        key: str | None = None,
        first_contact: bool = False,
        read: bool = False,
    ) -> rooms.Message:
        """Stored first; then streamed to members, announced for its answerer, and, in a
        line's room, sent out by the person's line when the person (or their agent) wrote
        (a voice line sends nothing: what it says, it says on the call), or refused before
        it is stored where that line cannot carry it whole or is disconnected. Under a
        `msg_id` stored before, it is the message stored first, and another is refused, for
        the hour the history's stream knows the id. A service's `key` is its room's org's
        own (two tenants may name their runs alike), and is known for as long as the
        service may ask again (a reader's message parked, then sent again days later).
        One its bot's service `read` as it came raises nothing for it to read again."""
        message = messages.alone(message)
        line = await self._line_out(room) if leaves(room, message) else None
        if line is not None:
            rooms.check_line(room.transport, message.text)
        if key is not None:
            msg_id = f"{room.org}.{key}"
        stored, fresh = await self._store.append(
            room.org, message, msg_id=msg_id, lasting=key is not None
        )
        if stored is None or not messages.same(stored, message):
            raise KeyReused()
        return await self._carried(
            room, stored, line, first_contact=first_contact, again=not fresh, read=read
        )

    async def _carried(
        self,
        room: rooms.Room,
        stored: rooms.Message,
        line: StoredLine | None,
        *,
        first_contact: bool = False,
        again: bool,
        read: bool = False,
    ) -> rooms.Message:
        """A stored message streamed, announced and sent out by `line`, if any; `again` for
        one stored before, which may have gone further then."""
        # What leaves was refused above if they opted out; what arrives may be a STOP.
        opted_out = (
            line is None and room.transport in _OPTING and await self._store.opted_out(room.id)
        )
        await self._store.announce(
            stored,
            messages.heard_on(stored),
            messages.stored(room, stored, first_contact=first_contact, opted_out=opted_out),
            None if read else messages.to_bot(room, stored),
        )
        await self._answered_drafts(room, stored)
        if line is not None:
            delivery = await self._send_out(room, stored, line, again=again)
            return msgspec.structs.replace(stored, delivery=delivery)
        return stored

    async def _answered_drafts(self, room: rooms.Room, stored: rooms.Message) -> None:
        """The person's own words in the room let go their agent's open drafts of replies
        to what they answer (`drafts.answers`): each would be a second answer, after theirs,
        and would wait in their pending list for good. Recorded as their act."""
        if stored.author_kind != "human" or not members.is_member(room, stored.author):
            return
        for draft in await self._store.drafts(stored.author, room.id):
            if draft.state == "open" and drafts.answers(room, draft, stored):
                await self._let_go(room, draft, stored.seq)

    async def _let_go(self, room: rooms.Room, draft: rooms.Draft, answer: int) -> rooms.Draft:
        """`draft` let go, answered by its person's message `answer`, recorded first."""
        return await self._store.change_draft(
            draft,
            lambda d: drafts.answered(d, answer),
            record=lambda _, after: self._trail.change(
                room.org,
                actor=Principal(org=room.org, sub=after.person),
                action="rooms.draft.answered",
                target=after.id,
                data={"room": room.id, "answered_by": answer},
            ),
        )

    async def _line_out(self, room: rooms.Room) -> StoredLine | None:
        """The line what is said in `room` leaves by, if any (a room of no line, or of a
        voice line, which says what it says on the call, has none); refused while it is
        disconnected, past WhatsApp's service window, or after its correspondent opted out,
        so no message is stored as said to someone it never reaches."""
        if room.transport in (None, "voice"):
            return None
        assert room.owner is not None
        line = await self._store.line(room.owner, room.transport)
        if line is None or room.correspondent is None:
            raise Refused(
                "line-disconnected",
                409,
                f"the {room.transport} line of this room is disconnected: nothing can leave "
                f"by it to {room.correspondent} until it is connected again",
            )
        if not lines.answerable(room.transport, room.correspondent):
            raise Refused(
                "cannot-reply",
                409,
                f"{room.correspondent} is a short code or a sender name: no "
                f"{room.transport} line can answer it",
            )
        heard = await self._store.heard(room.id) if room.transport == "whatsapp" else None
        if not lines.in_service_window(room.transport, heard, self._clock()):
            raise Refused(
                "outside-service-window",
                409,
                f"WhatsApp takes a message to {room.correspondent} only within 24 hours of "
                f"their last, at {heard:%Y-%m-%d %H:%M} UTC; nothing leaves until they write",
            )
        if room.transport in _OPTING and await self._store.opted_out(room.id):
            raise Refused(
                "opted-out",
                409,
                f"{room.correspondent} opted out of this {room.transport} line (a STOP, a spam "
                "complaint or an unsubscribe): nothing leaves by it to them until they write "
                "again" + (" START" if room.transport == "sms" else ""),
            )
        return line

    async def _send_out(
        self, room: rooms.Room, message: rooms.Message, line: StoredLine, *, again: bool
    ) -> rooms.Delivery:
        """Handed to the carrier, and its delivery kept to be followed; one stored before
        (`again`) and handed over then is not handed over again, but indexed again by the
        carrier's id, which the try that stored it may have stopped before writing."""
        assert room.transport is not None and room.correspondent is not None
        if again and (handed := await self._store.delivery(room.id, message.seq)) is not None:
            await self._store.index_delivery(room.id, message.seq, handed)
            return handed
        thread = await self._store.thread(room.id) if room.transport == "email" else None
        carrier = await self._transport.send(
            Outbound(
                transport=room.transport,
                org=room.org,
                room=room.id,
                seq=message.seq,
                sender=line.address,
                to=room.correspondent,
                text=message.text,
                author_kind=message.author_kind,
                on_behalf_of=message.on_behalf_of,
                automatic=message.automatic,
                answering=None if thread is None else threads.answering(thread),
            )
        )
        delivery = deliveries.handed_over(room.transport, carrier, self._clock())
        return await self._store.put_delivery(room, message.seq, delivery)

    async def _room(self, room_id: str, p: Principal) -> rooms.Room:
        room = await self._store.room_of(members.caller(p).id, room_id)
        if room is None or not members.readable_in(room, p):
            raise Refused("room-not-found", 404, f"no room {room_id}")
        return room

    async def _message(
        self, room: rooms.Room, seq: int, *, reader: str | None = None
    ) -> rooms.Message:
        found = await self._store.message(room.org, room.id, seq, reader=reader)
        if found is None:
            raise Refused("message-not-found", 404, f"room {room.id} has no message {seq}")
        return found

    async def _draft(self, room: rooms.Room, draft_id: str, p: Principal) -> rooms.Draft:
        if p.is_agent:
            raise Refused("agent-may-not", 403, "an agent may not send or discard drafts")
        for person in draft_holders(room, p):
            found = await self._store.draft(person, room.id, draft_id)
            if found is not None:
                return found
        raise Refused("draft-not-found", 404, f"you have no draft {draft_id} in {room.id}")

    async def _first_contact(self, room: rooms.Room, message: rooms.Message) -> bool:
        """The first message from an outside person on a line: the first in its room that
        was not sent automatically."""
        if room.transport is None:
            return False
        first = await self._first_said(room)
        return first is not None and first.seq == message.seq

    async def _first_said(self, room: rooms.Room) -> rooms.Message | None:
        """The room's first message that was not sent automatically (a list's mail, an
        auto-reply, which no one answers, is no contact), if any: most often the first."""
        return await self._first_after(room, 0, lambda m: not m.automatic, first_page=1)

    async def _first_after(
        self,
        room: rooms.Room,
        after: int,
        matches: Callable[[rooms.Message], bool],
        *,
        first_page: int = pages.MOST,
    ) -> rooms.Message | None:
        """The room's first message after seq `after` that `matches`, read page by page."""
        limit, more = first_page, True
        while more:
            found, more = await self._store.page(room.org, room.id, after, limit)
            if match := next((m for m in found if matches(m)), None):
                return match
            after, limit = (found[-1].seq if found else after), pages.MOST
        return None


def leaves(room: rooms.Room, message: rooms.Message) -> bool:
    """What the person or their agent says to the correspondent leaves by the line; what
    the correspondent said, notices, questions and answers stay in the room."""
    inside = message.notice or message.question is not None or message.answers is not None
    return not inside and message.author != f"{room.transport}:{room.correspondent}"


def person_of(p: Principal, what: str) -> tuple[str, str]:
    if p.is_agent:
        raise Refused("agent-may-not", 403, f"an agent may not {what}")
    org = home_org(p.sub)
    if org is None:
        raise Refused("no-home-org", 403, f"{p.sub!r} is not a person <org>/<name>")
    return org, p.sub


def draft_holders(room: rooms.Room, p: Principal) -> list[str]:
    """Whose drafts the caller may see here: their own, and the org's ambient agent's if
    they administer the room's org."""
    holders = [p.sub]
    if room.scope == "org" and room.org == p.org and "admin" in p.roles:
        holders.append(rooms.ORG)
    return holders
