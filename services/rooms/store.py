"""The rooms service's own state: the ROOMS stream (each room's ordered history, and what
left through a transport) and the `rooms` and `rooms-lines` buckets.

Keys in `rooms`:
    room.<room>                      the room
    member.<member>.<room>           the member's way in: every read starts from it
    draft.<person>.<room>.<draft>    an agent's draft, held for its person; once sent or
                                     discarded, kept a while (`TETHER_SETTLED_KEPT`), then
                                     removed by the server
    answered.<room>.<seq>            the one answer a question gets
    delivery.<room>.<seq>            how a message that left by a line fares
    carrier.<transport>.<id>         which message a carrier's id is: "<room> <seq>"
    arrived.<arrival id>             where what a carrier sent was stored: "<room> <seq> <0|1>",
                                     the last its first contact; kept while it may be sent again
    keyed.<digest of key>            where what a service asked to store under a key was
                                     stored: "<room> <seq>"; kept while it may be asked again
    failed.<person>.<room>.<seq>     a failed delivery waiting on its person; dismissed, its
                                     marker removed in turn after a while
    asked.<person>.<room>.<seq>      a question waiting on its person's answer (a person's or
                                     a bot's: their own agent's wait in the ladder and PoA);
                                     answered, its marker removed in turn after a while; one
                                     that closes, removed by the server a minute after
    opted_out.<room>                 a line's room whose correspondent opted out (STOP,
                                     an email's spam complaint or unsubscribe)
    heard.<room>                     when a WhatsApp room last heard from its correspondent
Keys in `rooms-lines`:
    claim.<person>.<transport>       a line waiting for its code
    line.<person>.<transport>        a person's connected line, its credential sealed
    address.<transport>.<address>    whose line an address is, for inbound webhooks
    signed.<transport>.<token>       a carrier's signature token taken, while it is fresh

A room and a member's way in are written once and changed only when an org's agent or bot
is removed (the room rewritten without it, then its way in deleted), so any replica that
holds one answers rightly but for the moment it is behind such a removal (the removed
agent's tokens are refused from the moment it is removed, by the gateway); one that holds
none may only be behind, so the room is called absent only once the stream's leader agrees
(`libs.runtime.leader`): a room just made is not a 404 from another node, and a member's
rooms list it at once.
"""

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec, pending
from libs.contracts.base import key_token
from libs.contracts.rooms import (
    ANSWER_STORED,
    BOT_MESSAGE,
    MESSAGE_STORED,
    ORG,
    ROOMS,
    BotMessage,
    Delivery,
    Draft,
    FailedDelivery,
    Message,
    MessageStored,
    Question,
    Room,
    Transport,
    delivery_subject,
)
from libs.runtime import logs, pages
from libs.runtime.direct import batch_get
from libs.runtime.kv import (
    Conflict,
    Read,
    Record,
    caught_up,
    current,
    delete,
    delete_at,
    open_bucket,
    put,
    remove,
    swap,
    write_at,
)
from libs.runtime.leader import exact_reads, newest_seq, seen
from libs.runtime.service import ensure_stream
from libs.runtime.settings import SETTLED_KEPT
from services.rooms.domain import members
from services.rooms.domain.claims import Claim
from services.rooms.domain.drafts import WAITING
from services.rooms.domain.lines import MAX_SKEW_S
from services.rooms.domain.threads import Thread

__all__ = ["RoomStore", "StoredLine", "open_store"]

# A timestamp is fresh within MAX_SKEW_S either side of now: its token, from the first
# time it is seen until the last it could be fresh.
_TOKEN_KEPT = timedelta(seconds=2 * MAX_SKEW_S)
# Meta sends a webhook again for up to 7 days, Mailgun for 8 hours.
_ARRIVED_KEPT = timedelta(days=8)
# A service asks again what it asked before for as long as it keeps what it asked for (the
# ladder its settled windows and confirmations, a week by default), or when a reader's
# message parked on DEAD is sent again, once its cause is fixed: most often within days.
_KEYED_KEPT = timedelta(days=8)
# A question that closes waits on its person until then; read after, it is not listed.
_CLOSED_KEPT = timedelta(minutes=1)


class StoredLine(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    org: str
    person: str
    transport: Transport
    address: str
    sealed: bytes
    connected_at: str
    forward_to: str | None = None  # voice: where a call the agent does not take rings


_room = codec.decoder(Room)
_message = codec.decoder(Message)
_draft = codec.decoder(Draft)
_delivery = codec.decoder(Delivery)
_failed = codec.decoder(FailedDelivery)
_line = codec.decoder(StoredLine)
_claim = codec.decoder(Claim)
_thread = codec.decoder(Thread)


class RoomStore:
    def __init__(
        self,
        nc: Client,
        rooms: KeyValue,
        lines: KeyValue,
        exact: Read,
        *,
        replicated: bool,
        kept: timedelta = SETTLED_KEPT,
    ) -> None:
        self._nc, self._js = nc, nc.jetstream()
        self._rooms, self._lines, self._exact = rooms, lines, exact
        self._replicated = replicated  # the history's stream: a page is read as caught up
        self._kept = kept

    # rooms and members

    async def create_room(self, room: Room) -> bool:
        """True if made now. Members are written before the room (at most 64 at once), so a
        room that exists always has its ways in; a way into a room never made leads nowhere."""
        writing = asyncio.Semaphore(64)

        async def way_in(member_id: str) -> None:
            async with writing:
                await self._rooms.put(f"member.{key_token(member_id)}.{room.id}", room.org.encode())

        await asyncio.gather(*(way_in(m.id) for m in room.members))
        try:
            await write_at(self._rooms, f"room.{room.id}", codec.encode(room), 0)
        except Conflict:
            return False
        return True

    async def rooms_with(self, member: str) -> list[str]:
        """The id of every room `member` has a way into."""
        entries = await self._exact(self._rooms, f"member.{key_token(member)}.*")
        return [e.key.rsplit(".", 1)[1] for e in entries]

    async def leave(self, room_id: str, member: str, record: Record) -> None:
        """`member` out of the room: the room rewritten without it (recorded first), then
        its way in deleted, so a leave cut short between the two is found and done again."""
        await swap(
            self._rooms,
            f"room.{room_id}",
            lambda room: members.without(room, member),
            decode=_room.decode,
            default=None,
            record=record,
            read=self._exact,
        )
        await delete(self._rooms, f"member.{key_token(member)}.{room_id}")

    async def room_of(self, member: str, room_id: str) -> Room | None:
        """The room, reached through `member`'s membership; None if they are not in it."""
        if await seen(self._rooms, f"member.{key_token(member)}.{room_id}", self._exact) is None:
            return None
        return await self.room(room_id)

    async def room(self, room_id: str) -> Room | None:
        found = await seen(self._rooms, f"room.{room_id}", self._exact)
        return None if found is None else _room.decode(found)

    async def rooms_of(
        self, member: str, *, after: str | None, limit: int
    ) -> tuple[list[Room], str | None]:
        """A page of the member's rooms by room id, and the cursor of the next page. A room
        of 2,000 members is some 200 KB, so a page also ends where the bus could not carry
        more (`pages.within`)."""
        entries = await self._exact(self._rooms, f"member.{key_token(member)}.*")
        ids = sorted(e.key.rsplit(".", 1)[1] for e in entries)
        ids = [i for i in ids if after is None or i > after]
        page = ids[:limit]
        found = await asyncio.gather(*(self.room(room_id) for room_id in page))
        made = [room for room in found if room is not None]
        kept, cut = pages.first(made, limit)
        if cut:
            return kept, kept[-1].id
        return kept, (page[-1] if len(ids) > limit else None)

    # history

    async def append(
        self, org: str, message: Message, *, msg_id: str | None = None, lasting: bool = False
    ) -> tuple[Message | None, bool]:
        """Store `message`; it comes back with its seq, and True. A repeated `msg_id` stores
        nothing and answers the message stored under it first (or None if that is another
        room's), and False: for the hour the stream knows the id, and, `lasting`, for as long
        as the `keyed.` entry is kept."""
        if lasting and msg_id and (earlier := await _get(self._rooms, _keyed_key(msg_id))):
            room_id, seq = earlier[0].decode().split(" ")
            if room_id != message.room:
                return None, False
            return await self.message(org, room_id, int(seq), reader=message.to), False
        headers = {"Nats-Msg-Id": msg_id} if msg_id else None
        subject = (
            _private(org, message.room, message.to)
            if message.private and message.to
            else _subject(org, message.room)
        )
        ack = await self._js.publish(subject, codec.encode(message), headers=headers)
        stored = (
            await self.message(org, message.room, ack.seq, reader=message.to)
            if ack.duplicate
            else msgspec.structs.replace(message, seq=ack.seq)
        )
        if lasting and msg_id and stored is not None:
            with contextlib.suppress(Conflict):  # noted by a retry first: the same
                where = f"{message.room} {stored.seq}".encode()
                await write_at(self._rooms, _keyed_key(msg_id), where, 0, keep=_KEYED_KEPT)
        return stored, not ack.duplicate

    async def announce(
        self, message: Message, live: str, event: MessageStored, to_bot: BotMessage | None
    ) -> None:
        """A stored message, heard live on `live`, its event for the services that answer
        it, and, written to a bot, the event for the bot's service (a repeat of one seq is
        dropped by the stream)."""
        await self._nc.publish(live, codec.encode(message))
        subject = MESSAGE_STORED if event.answers is None else ANSWER_STORED
        headers = {"Nats-Msg-Id": f"stored-{event.seq}", **logs.carried()}
        await self._js.publish(subject.name, codec.encode(event), headers=headers)
        if to_bot is not None:
            headers = {"Nats-Msg-Id": f"to-bot-{event.seq}", **logs.carried()}
            await self._js.publish(BOT_MESSAGE.name, codec.encode(to_bot), headers=headers)

    async def message(
        self, org: str, room_id: str, seq: int, *, reader: str | None = None
    ) -> Message | None:
        """Message `seq` of the room, if it is the members' or `reader`'s alone. A message
        is stored once and never changed, so any replica holding it answers rightly; one
        that does not may only be behind, so the stream's leader is asked before it is
        called absent."""
        try:
            raw = await self._js.get_msg(ROOMS.name, seq, direct=True)
        except NotFoundError:
            try:
                raw = await self._js.get_msg(ROOMS.name, seq)
            except NotFoundError:
                return None
        readable = {_subject(org, room_id), *([_private(org, room_id, reader)] if reader else [])}
        if raw.subject not in readable or raw.data is None:
            return None
        return msgspec.structs.replace(_message.decode(raw.data), seq=seq)

    async def page(
        self, org: str, room_id: str, after: int, limit: int, *, reader: str | None = None
    ) -> tuple[list[Message], bool]:
        """Up to `limit` messages after seq `after`, oldest first, and whether there are
        more: the members' and, with `reader`, what is for that reader alone (each one
        batched direct get of its own subject, so nothing of another's is ever read).

        On a replicated stream, a page is read from a replica that holds, on each subject,
        the newest message the leader held when the read began (or more than one page
        holds): a message just stored is in the page that ends the history."""
        subjects = [_subject(org, room_id), *([_private(org, room_id, reader)] if reader else [])]

        async def read() -> list[tuple[list[Msg], int]]:
            return await asyncio.gather(
                *(
                    batch_get(
                        self._nc, ROOMS.name, {"seq": after + 1, "next_by_subj": s, "batch": limit}
                    )
                    for s in subjects
                )
            )

        if self._replicated:
            newest = await asyncio.gather(*(newest_seq(self._js, ROOMS.name, s) for s in subjects))

            async def held() -> tuple[list[tuple[list[Msg], int]], bool]:
                pages = await read()
                return pages, all(map(partial(_holds, after), pages, newest))

            pages = await caught_up(held, f"the history of {room_id}")
        else:
            pages = await read()
        found = sorted(
            (
                msgspec.structs.replace(_message.decode(m.data), seq=_seq(m))
                for msgs, _ in pages
                for m in msgs
            ),
            key=lambda m: m.seq,
        )
        more = any(pending > 0 for _, pending in pages) or len(found) > limit
        return found[:limit], more

    async def record_outbound(self, transport: str, org: str, body: bytes, msg_id: str) -> None:
        await self._js.publish(
            f"rooms.outbound.{transport}.{org}", body, headers={"Nats-Msg-Id": msg_id}
        )

    # drafts and answers

    async def create_draft(self, draft: Draft) -> Draft:
        """The draft, or the one already held for the same message."""
        key = _draft_key(draft.person, draft.room, draft.id)
        try:
            await write_at(self._rooms, key, codec.encode(draft), 0)
        except Conflict:
            found = await self.draft(draft.person, draft.room, draft.id)
            assert found is not None
            return found
        await self._nudge(draft)
        return draft

    async def draft(self, person: str, room_id: str, draft_id: str) -> Draft | None:
        found = await _get(self._rooms, _draft_key(person, room_id, draft_id))
        return None if found is None else _draft.decode(found[0])

    async def drafts(self, person: str, room_id: str) -> list[Draft]:
        entries = await current(self._rooms, _draft_key(person, room_id, "*"))
        return [_draft.decode(e.value) for e in entries]

    async def drafts_of(self, person: str) -> list[Draft]:
        """The person's drafts in every room."""
        entries = await current(self._rooms, _draft_key(person, "*", "*"))
        return [_draft.decode(e.value) for e in entries]

    async def change_draft(
        self, draft: Draft, change: Callable[[Draft], Draft], *, record: Record | None = None
    ) -> Draft:
        """The draft as stored after `change`, by compare-and-set."""
        key = _draft_key(draft.person, draft.room, draft.id)
        before, after = await swap(
            self._rooms,
            key,
            change,
            decode=_draft.decode,
            default=draft,
            kept=lambda d: None if d.state in WAITING else self._kept,
            record=record,
        )
        if before != after:
            await self._nudge(after)
        return after

    async def _nudge(self, draft: Draft) -> None:
        """The person's pending list changed (the ambient agent's drafts are per room)."""
        if draft.person != ORG:
            await self._nudge_person(draft.org, draft.person)

    async def _nudge_person(self, org: str, person: str) -> None:
        await self._nc.publish(pending.changed("rooms", org, key_token(person)), b"")

    # deliveries: how a message that left by a line fares

    async def put_delivery(self, room: Room, seq: int, delivery: Delivery) -> Delivery:
        """Handed over: stored once (a repeat keeps the first), found again by the carrier's
        id, and told to the room's stream. A repeat indexes the first by its carrier's id
        again: the try that stored it may have stopped before it did, and the carrier's
        word on it would then find no message."""
        try:
            await write_at(self._rooms, _delivery_key(room.id, seq), codec.encode(delivery), 0)
        except Conflict:
            found = await _get(self._rooms, _delivery_key(room.id, seq))
            assert found is not None
            first = _delivery.decode(found[0])
            await self.index_delivery(room.id, seq, first)
            return first
        await self.index_delivery(room.id, seq, delivery)
        await self._tell(room.id, seq, delivery)
        return delivery

    async def index_delivery(self, room_id: str, seq: int, delivery: Delivery) -> None:
        """Found by the carrier's id (a put: writing it twice is harmless)."""
        where = _carrier_key(delivery.transport, delivery.carrier_id)
        await put(self._rooms, where, f"{room_id} {seq}".encode())

    async def delivered_as(self, transport: str, carrier_id: str) -> tuple[str, int] | None:
        """(room, seq) of what left by `transport` under the carrier's id."""
        found = await _get(self._rooms, _carrier_key(transport, carrier_id))
        if found is None:
            return None
        room, _, seq = found[0].decode().partition(" ")
        return room, int(seq)

    async def opted_out(self, room_id: str) -> bool:
        """Whether the room's correspondent opted out of what its line sends them, as of
        every acknowledged opt."""
        return bool(await self._exact(self._rooms, f"opted_out.{room_id}"))

    async def opt(self, room_id: str, *, out: bool) -> None:
        if out:
            await self._rooms.put(f"opted_out.{room_id}", b"")
        else:
            with contextlib.suppress(KeyNotFoundError):
                await self._rooms.delete(f"opted_out.{room_id}")

    async def heard(self, room_id: str) -> datetime | None:
        """When the room last heard from its correspondent, as of every acknowledged write."""
        found = await self._exact(self._rooms, f"heard.{room_id}")
        return datetime.fromisoformat(found[0].value.decode()) if found else None

    async def hear(self, room_id: str, at: datetime) -> None:
        await self._rooms.put(f"heard.{room_id}", at.isoformat().encode())

    async def thread(self, room_id: str) -> Thread | None:
        """The last mail its correspondent wrote in an email room, as a reply names it."""
        found = await self._exact(self._rooms, f"thread.{room_id}")
        return _thread.decode(found[0].value) if found and found[0].value else None

    async def keep_thread(self, room_id: str, thread: Thread) -> None:
        await self._rooms.put(f"thread.{room_id}", codec.encode(thread))

    async def arrived_as(self, arrival_id: str) -> tuple[str, int, bool] | None:
        """(room, seq, first contact) of what a carrier sent, stored under `arrival_id`."""
        found = await _get(self._rooms, f"arrived.{arrival_id}")
        if found is None:
            return None
        room, seq, first = found[0].decode().split(" ")
        return room, int(seq), first == "1"

    async def put_arrived(self, arrival_id: str, room_id: str, seq: int, first: bool) -> None:
        """Kept past the history's duplicate window, as long as a carrier sends again."""
        where = f"{room_id} {seq} {int(first)}".encode()
        with contextlib.suppress(Conflict):  # noted by a retry first: the same
            await write_at(self._rooms, f"arrived.{arrival_id}", where, 0, keep=_ARRIVED_KEPT)

    async def delivery(self, room_id: str, seq: int) -> Delivery | None:
        found = await _get(self._rooms, _delivery_key(room_id, seq))
        return None if found is None else _delivery.decode(found[0])

    async def deliveries(self, room_id: str, seqs: list[int]) -> dict[int, Delivery]:
        """How the messages `seqs` of the room fare, those that left by its line: their keys
        alone, one batched read, however many the room has sent before."""
        if not seqs:
            return {}
        entries = await current(self._rooms, *(_delivery_key(room_id, seq) for seq in seqs))
        return {int(e.key.rsplit(".", 1)[1]): _delivery.decode(e.value) for e in entries}

    async def change_delivery(
        self, room_id: str, seq: int, change: Callable[[Delivery], Delivery]
    ) -> tuple[Delivery, Delivery] | None:
        found = await _get(self._rooms, _delivery_key(room_id, seq))
        if found is None:
            return None
        before, after = await swap(
            self._rooms,
            _delivery_key(room_id, seq),
            change,
            decode=_delivery.decode,
            default=_delivery.decode(found[0]),
        )
        if before != after:
            await self._tell(room_id, seq, after)
        return before, after

    async def put_failed(self, org: str, person: str, failed: FailedDelivery) -> None:
        await self._rooms.put(_failed_key(person, failed.room, failed.seq), codec.encode(failed))
        await self._nudge_person(org, person)

    async def failed(self, person: str) -> list[FailedDelivery]:
        entries = await current(self._rooms, _failed_key(person, "*", "*"))
        return [_failed.decode(e.value) for e in entries]

    async def dismiss_failed(self, org: str, person: str, room_id: str, seq: int) -> bool:
        key = _failed_key(person, room_id, seq)
        if await _get(self._rooms, key) is None:
            return False
        await remove(self._rooms, key, keep=self._kept)
        await self._nudge_person(org, person)
        return True

    async def put_question(self, org: str, question: Message, now: datetime) -> None:
        """`question` waits on the person it asks, until answered or closed."""
        assert question.question is not None and question.to is not None
        closes = question.question.closes_at
        if closes is not None and closes <= now:
            return
        keep = None if closes is None else closes - now + _CLOSED_KEPT
        key = _asked_key(question.to, question.room, question.seq)
        await put(self._rooms, key, codec.encode(question), keep=keep)
        await self._nudge_person(org, question.to)

    async def questions(self, person: str, now: datetime) -> list[Message]:
        """The questions waiting on `person`: asked, not closed, and not answered, whatever
        a question asked again after its answer (a retry of its asker's) wrote."""
        entries = await current(self._rooms, _asked_key(person, "*", "*"))
        asked = [_message.decode(e.value) for e in entries]
        asked = [q for q in asked if q.question and not _closed(q.question, now)]
        keys = [f"answered.{q.room}.{q.seq}" for q in asked]
        answered = {e.key for e in await current(self._rooms, *keys)} if keys else set()
        return [q for q, key in zip(asked, keys, strict=True) if key not in answered]

    async def question_answered(self, org: str, person: str, room_id: str, seq: int) -> None:
        key = _asked_key(person, room_id, seq)
        if await _get(self._rooms, key) is None:  # none of theirs, or its answer's retry
            return
        await remove(self._rooms, key, keep=self._kept)
        await self._nudge_person(org, person)

    async def _tell(self, room_id: str, seq: int, delivery: Delivery) -> None:
        body = msgspec.json.encode({"seq": seq, "delivery": delivery})
        await self._nc.publish(delivery_subject(room_id), body)

    async def answer_to(self, room_id: str, seq: int) -> int | None:
        """The seq of question `seq`'s answer, once claimed (0: claimed before claims named
        it)."""
        found = await _get(self._rooms, f"answered.{room_id}.{seq}")
        return None if found is None else int(found[0] or 0)

    async def claim_answer(self, room_id: str, seq: int, answer: int) -> None:
        """Question `seq` answered by message `answer`, for good; claimed already, by the
        same answer's earlier run, it stays as it is."""
        with contextlib.suppress(Conflict):
            await write_at(self._rooms, f"answered.{room_id}.{seq}", str(answer).encode(), 0)

    # lines: claims, then connected lines

    async def change_claim(
        self,
        person: str,
        transport: str,
        change: Callable[[Claim | None], Claim | None],
        *,
        record: Record | None = None,
    ) -> tuple[Claim | None, Claim | None]:
        """The person's claim on the transport before and after `change` (None: none), by
        compare-and-set; with `record`, recorded before it is written."""
        return await swap(
            self._lines,
            _claim_key(person, transport),
            change,
            decode=_claim.decode,
            default=None,
            record=record,
        )

    async def drop_claim(self, person: str, transport: str) -> None:
        await self._lines.delete(_claim_key(person, transport))

    async def claims(self, person: str) -> list[Claim]:
        entries = await current(self._lines, _claim_key(person, "*"))
        return [_claim.decode(e.value) for e in entries]

    async def line(self, person: str, transport: str) -> StoredLine | None:
        found = await _get(self._lines, _line_key(person, transport))
        return None if found is None else _line.decode(found[0])

    async def lines(self, person: str) -> list[StoredLine]:
        entries = await current(self._lines, _line_key(person, "*"))
        return [_line.decode(e.value) for e in entries]

    async def owner_of(self, transport: str, address: str) -> str | None:
        found = await _get(self._lines, _address_key(transport, address))
        return None if found is None else found[0].decode()

    async def connect(self, line: StoredLine) -> None:
        """Conflict if the address is another person's line."""
        key = _address_key(line.transport, line.address)
        try:
            await write_at(self._lines, key, line.person.encode(), 0)
        except Conflict:
            if await self.owner_of(line.transport, line.address) != line.person:
                raise
        previous = await self.line(line.person, line.transport)
        await put(self._lines, _line_key(line.person, line.transport), codec.encode(line))
        if previous is not None and previous.address != line.address:
            await delete(self._lines, _address_key(line.transport, previous.address))

    async def take_token(self, transport: str, token: str, body: str) -> bool:
        """Whether a carrier's signature token is new here, or came before with this same
        body (the carrier asking again). Kept while a timestamp it signed could be fresh."""
        key = f"signed.{transport}.{hashlib.sha256(token.encode()).hexdigest()}"
        digest = hashlib.sha256(body.encode()).digest()
        try:
            await write_at(self._lines, key, digest, 0, keep=_TOKEN_KEPT)
        except Conflict:
            # Read from any replica: one behind finds nothing, and nothing is no match.
            found = await _get(self._lines, key)
            return found is not None and found[0] == digest
        return True

    async def disconnect(self, line: StoredLine) -> None:
        """The address let go first, while it is still the person's, then the line. A
        replica that dies between the two leaves a line its person can disconnect again;
        the other order left a number held by no line, which no one else could connect."""
        key = _address_key(line.transport, line.address)
        found = await self._exact(self._lines, key)
        if found and found[0].value == line.person.encode():
            with contextlib.suppress(Conflict):  # connected by another since: theirs now
                await delete_at(self._lines, key, found[0].revision)
        await delete(self._lines, _line_key(line.person, line.transport))


async def open_store(nc: Client, *, replicas: int = 1, kept: timedelta = SETTLED_KEPT) -> RoomStore:
    js = nc.jetstream()
    await ensure_stream(js, ROOMS, replicas=replicas)
    rooms = await open_bucket(js, KeyValueConfig(bucket="rooms", history=4, replicas=replicas))
    lines = await open_bucket(
        js, KeyValueConfig(bucket="rooms-lines", history=2, replicas=replicas)
    )
    history = await js.stream_info(ROOMS.name)
    return RoomStore(
        nc,
        rooms,
        lines,
        await exact_reads(rooms),
        replicated=history.config.num_replicas > 1,
        kept=kept,
    )


def _holds(after: int, page: tuple[list[Msg], int], newest: int) -> bool:
    """Whether a page read after `after` holds the subject's `newest` message, or is one of
    several pages (the next holds it)."""
    msgs, more = page
    return more > 0 or newest <= after or (bool(msgs) and _seq(msgs[-1]) >= newest)


def _seq(msg: Msg) -> int:
    return int(msg.headers["Nats-Sequence"])


def _subject(org: str, room_id: str) -> str:
    return f"rooms.msg.{org}.{room_id}"


def _private(org: str, room_id: str, person: str) -> str:
    return f"rooms.private.{org}.{room_id}.{key_token(person)}"


def _keyed_key(msg_id: str) -> str:
    return f"keyed.{hashlib.sha256(msg_id.encode()).hexdigest()[:32]}"


def _claim_key(person: str, transport: str) -> str:
    return f"claim.{key_token(person)}.{transport}"


def _line_key(person: str, transport: str) -> str:
    return f"line.{key_token(person)}.{transport}"


def _address_key(transport: str, address: str) -> str:
    return f"address.{transport}.{key_token(address)}"


def _delivery_key(room_id: str, seq: int | str) -> str:
    return f"delivery.{room_id}.{seq}"


def _carrier_key(transport: str, carrier_id: str) -> str:
    return f"carrier.{transport}.{key_token(carrier_id)}"


def _failed_key(person: str, room_id: str, seq: int | str) -> str:
    return f"failed.{key_token(person)}.{room_id}.{seq}"


def _asked_key(person: str, room_id: str, seq: int | str) -> str:
    return f"asked.{key_token(person)}.{room_id}.{seq}"


def _closed(question: Question, now: datetime) -> bool:
    return question.closes_at is not None and question.closes_at <= now


def _draft_key(person: str, room_id: str, draft_id: str) -> str:
    return f"draft.{key_token(person)}.{room_id}.{draft_id}"


async def _get(kv: KeyValue, key: str) -> tuple[bytes, int] | None:
    try:
        entry = await kv.get(key)
    except KeyNotFoundError:
        return None
    return (entry.value, entry.revision) if entry.value is not None else None
