"""One handler per `tether.rooms.*` subject. Every read of a room starts from the caller's
membership; a non-member, whatever their role, finds nothing (404)."""

import secrets
from collections.abc import Callable, Mapping
from datetime import datetime

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import agents, codec, rooms
from libs.contracts.base import home_org
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.runtime.calls import call
from libs.runtime.kv import Conflict
from libs.runtime.service import Handler
from services.rooms.domain import claims, lines, members, messages, questions
from services.rooms.sealing import Sealer
from services.rooms.store import RoomStore, StoredLine
from services.rooms.transports import Outbound, Transport

__all__ = ["Handlers"]

Clock = Callable[[], datetime]


class Handlers:
    def __init__(
        self,
        nc: Client,
        store: RoomStore,
        trail: Trail,
        sealer: Sealer,
        transport: Transport,
        clock: Clock,
    ) -> None:
        self._nc, self._store, self._trail = nc, store, trail
        self._sealer, self._transport, self._clock = sealer, transport, clock

    # rooms

    async def create(self, req: rooms.CreateRoom, p: Principal) -> rooms.Room:
        limits: agents.PlanLimits = await call(
            self._nc, agents.LIMITS, agents.PlanLimitsRequest(org=p.org), caller="rooms"
        )
        room_id = f"r-{secrets.token_hex(8)}"
        room = members.new_room(req, p, room_id, self._clock(), max_members=limits.room_members)
        async with self._trail.change(
            room.org, actor=p, action="rooms.room.create", target=room.id
        ):
            await self._store.create_room(room)
        return room

    async def list_mine(self, req: rooms.ListRooms, p: Principal) -> rooms.RoomList:
        found, next_ = await self._store.rooms_of(
            members.caller(p).id, after=req.after, limit=req.limit
        )
        return rooms.RoomList(rooms=[r for r in found if members.readable_in(r, p)], next=next_)

    async def get(self, req: rooms.RoomRef, p: Principal) -> rooms.Room:
        return await self._room(req.id, p)

    async def messages(self, req: rooms.ListMessages, p: Principal) -> rooms.MessagePage:
        room = await self._room(req.id, p)
        found, more = await self._store.page(room.org, room.id, req.after, req.limit, reader=p.sub)
        return rooms.MessagePage(messages=found, next=found[-1].seq if more else None)

    async def send(self, req: rooms.Send, p: Principal) -> rooms.Message:
        room = await self._room(req.id, p)
        if req.reply_to is not None:
            await self._message(room, req.reply_to, reader=p.sub)
        message = messages.authored(
            room, p, req.text, self._clock(), to=req.to, reply_to=req.reply_to
        )
        return await self._store_message(room, message)

    # confirmation questions

    async def ask(self, req: rooms.Ask, p: Principal) -> rooms.Message:
        room = await self._room(req.id, p)
        question = rooms.Question(options=req.options)
        message = messages.authored(room, p, req.text, self._clock(), to=req.to, question=question)
        return await self._store_message(room, message)

    async def answer(self, req: rooms.AnswerQuestion, p: Principal) -> rooms.Message:
        room = await self._room(req.id, p)
        asked = await self._message(room, req.seq, reader=p.sub)
        questions.check_answerer(asked, p)
        text = questions.answer_text(asked, req.choice)
        message = messages.answer_alone(
            messages.authored(
                room, p, text, self._clock(), reply_to=req.seq, answers=req.seq, choice=req.choice
            ),
            asked,
        )
        if not await self._store.claim_answer(room.id, req.seq):
            raise Refused("already-answered", 409, f"question {req.seq} has its answer")
        try:
            return await self._store_message(room, message, msg_id=f"answer-{room.id}-{req.seq}")
        except Exception:
            await self._store.release_answer(room.id, req.seq)
            raise

    # drafts

    async def post_draft(self, req: rooms.PostDraft, _: Principal) -> rooms.Draft:
        """From the agents service. Whose draft it is follows from the message it answers,
        as this service stored it; the request only says which agent wrote it."""
        room = await self._store.room(req.room)
        if room is None or room.org != req.org:
            raise Refused("room-not-found", 404, f"no room {req.room} in {req.org}")
        asked = await self._message(room, req.reply_to)
        answering = members.answerer(room, asked)
        if answering != req.agent:
            raise Refused(
                "not-the-answerer",
                409,
                f"message {req.reply_to} is answered by {answering}, not {req.agent}",
            )
        first = await self._first_contact(room, asked)
        draft = rooms.Draft(
            id=f"d-{room.id.split('-', 1)[1]}-{asked.seq}",
            room=room.id,
            org=room.org,
            agent=req.agent,
            person=asked.to or rooms.ORG,
            reply_to=asked.seq,
            text=req.text,
            first_contact=first,
            state="open",
            created_at=self._clock(),
        )
        return await self._store.create_draft(draft)

    async def drafts(self, req: rooms.ListDrafts, p: Principal) -> rooms.DraftList:
        room = await self._room(req.id, p)
        found = []
        for person in _draft_holders(room, p):
            found += await self._store.drafts(person, room.id)
        open_ = [d for d in found if d.state == "open"]
        return rooms.DraftList(drafts=sorted(open_, key=lambda d: d.reply_to))

    async def send_draft(self, req: rooms.SendDraft, p: Principal) -> rooms.Message:
        """The person sends their agent's draft (or their own text in its place) as their
        own message; the draft's id makes a repeated send store nothing more."""
        room = await self._room(req.id, p)
        draft, revision = await self._draft(room, req.draft, p)
        if draft.state != "open":
            raise Refused("draft-closed", 409, f"draft {draft.id} was {draft.state}")
        asked = await self._message(room, draft.reply_to)
        to = asked.author if members.is_member(room, asked.author) else None
        message = messages.authored(
            room,
            p,
            req.text or draft.text,
            self._clock(),
            to=to,
            reply_to=draft.reply_to,
            drafted_by=draft.agent,
        )
        async with self._trail.change(
            room.org, actor=p, action="rooms.draft.send", target=draft.id, data={"room": room.id}
        ):
            stored = await self._store_message(room, message, msg_id=draft.id)
        sent = msgspec.structs.replace(draft, state="sent", sent_seq=stored.seq)
        try:
            await self._store.replace_draft(sent, revision)
        except Conflict:
            pass  # sent at the same moment by another request; the msg id stored it once
        return stored

    async def discard_draft(self, req: rooms.DraftRef, p: Principal) -> rooms.Draft:
        room = await self._room(req.id, p)
        draft, revision = await self._draft(room, req.draft, p)
        if draft.state != "open":
            raise Refused("draft-closed", 409, f"draft {draft.id} was {draft.state}")
        discarded = msgspec.structs.replace(draft, state="discarded")
        try:
            async with self._trail.change(
                room.org,
                actor=p,
                action="rooms.draft.discard",
                target=draft.id,
                data={"room": room.id},
            ):
                await self._store.replace_draft(discarded, revision)
        except Conflict as exc:
            raise Refused("draft-changed", 409, f"draft {draft.id} changed; read it again") from exc
        return discarded

    # personal lines

    async def connect(self, req: rooms.ConnectLine, p: Principal) -> rooms.Line:
        """A claim on the address: a code goes to it through the line's transport, and the
        line connects only once its person sends the code back (`verify_line`). Whether the
        address is anyone else's is not said here: that would tell anyone who asks."""
        org, person = _person(p, "connect a line")
        address = lines.normalize(req.transport, req.address)
        code, salt = f"{secrets.randbelow(10**6):06d}", secrets.token_hex(8)
        sealed = self._sealer.seal(req.credential, owner=person, transport=req.transport)
        claim = claims.claim(
            org, person, req.transport, address, sealed, code=code, salt=salt, now=self._clock()
        )
        target = f"{person}:{req.transport}"
        async with self._trail.change(org, actor=p, action="rooms.line.claim", target=target):
            await self._store.put_claim(claim)
        await self._transport.send(
            Outbound(
                transport=req.transport,
                org=org,
                room="",
                seq=0,
                sender="tether",
                to=address,
                text=claims.code_text(code),
                author_kind="bot",
                on_behalf_of=None,
                key=f"code-{req.transport}-{salt}",
            )
        )
        return rooms.Line(transport=req.transport, address=address, state="pending")

    async def verify_line(self, req: rooms.VerifyLine, p: Principal) -> rooms.Line:
        org, person = _person(p, "connect a line")
        found = await self._store.claim(person, req.transport)
        if found is None:
            raise Refused("line-not-claimed", 404, f"you have no {req.transport} line waiting")
        claim, revision = found
        outcome, after = claims.attempt(claim, req.code, self._clock())
        match outcome:
            case "expired" | "spent":
                await self._store.drop_claim(person, req.transport)
                raise Refused(
                    "code-expired" if outcome == "expired" else "code-spent",
                    410,
                    f"that claim is void ({outcome}); connect the line again for a new code",
                )
            case "wrong":
                try:
                    await self._store.put_claim(after, revision)
                except Conflict as exc:
                    raise Refused("claim-changed", 409, "tried at once elsewhere; retry") from exc
                raise Refused(
                    "code-wrong", 422, f"that is not the code; {after.tries_left} tries left"
                )
        line = StoredLine(
            org=org,
            person=person,
            transport=req.transport,
            address=claim.address,
            sealed=claim.sealed,
            connected_at=self._clock().isoformat(),
        )
        async with self._trail.change(
            org, actor=p, action="rooms.line.connect", target=f"{person}:{req.transport}"
        ):
            try:
                await self._store.connect(line)
            except Conflict as exc:
                raise Refused(
                    "address-taken", 409, f"{claim.address} is another person's line"
                ) from exc
        await self._store.drop_claim(person, req.transport)
        return _line(line)

    async def lines(self, _: rooms.ListLines, p: Principal) -> rooms.LineList:
        _, person = _person(p, "read lines")
        connected = [_line(line) for line in await self._store.lines(person)]
        waiting = [
            rooms.Line(transport=c.transport, address=c.address, state="pending")
            for c in await self._store.claims(person)
        ]
        return rooms.LineList(lines=[*connected, *waiting])

    async def disconnect(self, req: rooms.DisconnectLine, p: Principal) -> rooms.Line:
        org, person = _person(p, "disconnect a line")
        line = await self._store.line(person, req.transport)
        if line is None:
            raise Refused("line-not-found", 404, f"you have no {req.transport} line")
        async with self._trail.change(
            org, actor=p, action="rooms.line.disconnect", target=f"{person}:{req.transport}"
        ):
            await self._store.disconnect(line)
        return _line(line)

    async def inbound(self, req: rooms.Inbound, _: None) -> rooms.Delivered:
        """A carrier's webhook: found by the address it was sent to, verified with that
        line's own secret, stored in the person's room for the correspondent. An address
        that is no connected line's is checked against a throwaway secret and refused in
        the same words as a bad signature, so the answer says nothing of who has a line."""
        arrived = lines.arrival(req)
        try:
            to = lines.normalize(req.transport, arrived.to)
            sender = lines.normalize(req.transport, arrived.sender)
        except Refused as exc:
            raise Refused("invalid-webhook", 422, exc.problem.detail) from exc
        person = await self._store.owner_of(req.transport, to)
        line = None if person is None else await self._store.line(person, req.transport)
        secret = (
            secrets.token_hex(16)
            if line is None
            else self._sealer.open(line.sealed, owner=line.person, transport=line.transport)
        )
        try:
            lines.verify(req, secret, self._clock())
        except Refused:
            line = None
        if line is None:
            raise Refused(
                "webhook-unverified",
                403,
                f"the webhook is not signed by the secret of a connected {req.transport} "
                f"line at {to}",
            )
        room = await self._line_room(line, sender)
        first = await self._store.is_empty(room.org, room.id)
        message = messages.inbound(
            room,
            f"{req.transport}:{sender}",
            arrived.text,
            req.transport,
            self._clock(),
            line.person,
        )
        stored = await self._store_message(
            room, message, msg_id=f"{req.transport}-{arrived.carrier_id}", first_contact=first
        )
        return rooms.Delivered(room=room.id, seq=stored.seq, first_contact=first)

    async def deliver(self, req: rooms.Deliver, _: Principal) -> rooms.Message:
        """From the ladder: the person's agent (or, for `own`, the person) in a room of
        theirs. Who wrote it follows from the kind, set here; `key` stores it once."""
        room = await self._store.room(req.room)
        if room is None or room.org != req.org or not members.is_member(room, req.person):
            raise Refused("room-not-found", 404, f"{req.person} has no room {req.room}")
        agent = members.personal_agent_id(req.person)
        as_agent = Principal(org=room.org, sub=req.person, act=agent)
        as_person = Principal(org=room.org, sub=req.person)
        now, to = self._clock(), None
        if req.reply_to is not None:
            asked = await self._message(room, req.reply_to)
            to = asked.author if members.is_member(room, asked.author) else None
        match req.kind:
            case "message":
                message = messages.authored(
                    room, as_agent, req.text, now, to=to, reply_to=req.reply_to
                )
            case "own":
                message = messages.authored(
                    room,
                    as_person,
                    req.text,
                    now,
                    to=to,
                    reply_to=req.reply_to,
                    drafted_by=agent if req.edited else None,
                )
            case "notice":
                message = msgspec.structs.replace(
                    messages.authored(
                        room, as_agent, req.text, now, to=req.person, reply_to=req.reply_to
                    ),
                    notice=True,
                )
            case "question":
                if not req.options:
                    raise Refused("invalid-request", 422, "a question needs an option")
                message = messages.authored(
                    room,
                    as_agent,
                    req.text,
                    now,
                    to=req.person,
                    reply_to=req.reply_to,
                    question=rooms.Question(options=req.options),
                )
        return await self._store_message(room, message, msg_id=req.key)

    # from the agents service

    async def history(self, req: rooms.History, _: Principal) -> rooms.MessagePage:
        room = await self._store.room(req.room)
        if room is None or room.org != req.org:
            raise Refused("room-not-found", 404, f"no room {req.room} in {req.org}")
        # The stream holds every room's messages in one sequence, so look back through a
        # span of it that doubles until it holds `limit` of this room's, or reaches the start.
        span = 10 * req.limit
        while True:
            after = max(0, req.upto - span)
            found, _ = await self._store.page(room.org, room.id, after, span)
            upto = [m for m in found if m.seq <= req.upto]
            if len(upto) >= req.limit or after == 0:
                return rooms.MessagePage(messages=upto[-req.limit :])
            span *= 2

    def table(self) -> Mapping[Subject, Handler]:
        return {
            rooms.CREATE: self.create,
            rooms.LIST: self.list_mine,
            rooms.GET: self.get,
            rooms.MESSAGES: self.messages,
            rooms.SEND: self.send,
            rooms.ASK: self.ask,
            rooms.ANSWER: self.answer,
            rooms.DRAFTS: self.drafts,
            rooms.SEND_DRAFT: self.send_draft,
            rooms.DISCARD_DRAFT: self.discard_draft,
            rooms.CONNECT: self.connect,
            rooms.VERIFY_LINE: self.verify_line,
            rooms.LINES: self.lines,
            rooms.DISCONNECT: self.disconnect,
            rooms.INBOUND: self.inbound,  # type: ignore[dict-item]
            rooms.HISTORY: self.history,
            rooms.POST_DRAFT: self.post_draft,
            rooms.DELIVER: self.deliver,
        }

    # the way every message is stored

    async def _store_message(
        self,
        room: rooms.Room,
        message: rooms.Message,
        *,
        msg_id: str | None = None,
        first_contact: bool = False,
    ) -> rooms.Message:
        """Stored first; then streamed to members, announced for its answerer, and, in a
        line's room, sent out by the person's line when the person (or their agent) wrote."""
        stored = await self._store.append(room.org, messages.alone(message), msg_id=msg_id)
        members_hear, alone_hears = rooms.live_subjects(room.id, stored.to or "")
        await self._nc.publish(
            alone_hears if stored.private else members_hear, codec.encode(stored)
        )
        event = rooms.MessageStored(
            org=room.org,
            room=room.id,
            seq=stored.seq,
            author_kind=stored.author_kind,
            to=stored.to,
            answerer=members.answerer(room, stored),
            first_contact=first_contact,
            transport=room.transport,
            answers=stored.answers,
            choice=stored.choice,
        )
        await self._nc.jetstream().publish(
            (rooms.MESSAGE_STORED if stored.answers is None else rooms.ANSWER_STORED).name,
            codec.encode(event),
            headers={"Nats-Msg-Id": f"stored-{stored.seq}"},
        )
        if room.transport is not None and _leaves(room, stored):
            await self._send_out(room, stored)
        return stored

    async def _send_out(self, room: rooms.Room, message: rooms.Message) -> None:
        assert room.transport is not None and room.owner is not None
        line = await self._store.line(room.owner, room.transport)
        if line is None or room.correspondent is None:
            return  # the line was disconnected: the message is stored, nothing leaves
        await self._transport.send(
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
            )
        )

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

    async def _draft(
        self, room: rooms.Room, draft_id: str, p: Principal
    ) -> tuple[rooms.Draft, int]:
        if p.is_agent:
            raise Refused("agent-may-not", 403, "an agent may not send or discard drafts")
        for person in _draft_holders(room, p):
            found = await self._store.draft(person, room.id, draft_id)
            if found is not None:
                return found
        raise Refused("draft-not-found", 404, f"you have no draft {draft_id} in {room.id}")

    async def _first_contact(self, room: rooms.Room, message: rooms.Message) -> bool:
        """The first message from an outside person on a line: the first in its room."""
        if room.transport is None:
            return False
        first, _ = await self._store.page(room.org, room.id, 0, 1)
        return bool(first) and first[0].seq == message.seq

    async def _line_room(self, line: StoredLine, correspondent: str) -> rooms.Room:
        """The room for this correspondent, made on first contact, and announced in the
        line's hub room when made."""
        room_id = lines.room_id(line.transport, line.org, line.person, correspondent)
        room = await self._store.room(room_id)
        if room is not None:
            return room
        now = self._clock()
        own = (
            rooms.Member(kind="human", id=line.person),
            rooms.Member(kind="agent", id=members.personal_agent_id(line.person)),
        )
        room = rooms.Room(
            id=room_id,
            org=line.org,
            scope="personal",
            title=f"{line.transport} {correspondent}",
            members=(*own, rooms.Member(kind="human", id=f"{line.transport}:{correspondent}")),
            created_at=now,
            owner=line.person,
            transport=line.transport,
            correspondent=correspondent,
        )
        if await self._store.create_room(room):
            hub = await self._hub(line, own, now)
            notice = rooms.Message(
                seq=0,
                room=hub.id,
                at=now,
                author="service:rooms",
                author_kind="bot",
                text=f"New conversation with {correspondent}: room {room.id}",
            )
            await self._store.append(hub.org, notice, msg_id=f"hub-{room.id}")
        return room

    async def _hub(
        self, line: StoredLine, own: tuple[rooms.Member, ...], now: datetime
    ) -> rooms.Room:
        hub_id = lines.room_id(line.transport, line.org, line.person, None)
        hub = rooms.Room(
            id=hub_id,
            org=line.org,
            scope="personal",
            title=f"{line.transport} {line.address}",
            members=own,
            created_at=now,
            owner=line.person,
            transport=None,
        )
        await self._store.create_room(hub)
        return hub


def _leaves(room: rooms.Room, message: rooms.Message) -> bool:
    """What the person or their agent says to the correspondent leaves by the line; what
    the correspondent said, notices, questions and answers stay in the room."""
    inside = message.notice or message.question is not None or message.answers is not None
    return not inside and message.author != f"{room.transport}:{room.correspondent}"


def _person(p: Principal, what: str) -> tuple[str, str]:
    if p.is_agent:
        raise Refused("agent-may-not", 403, f"an agent may not {what}")
    org = home_org(p.sub)
    if org is None:
        raise Refused("no-home-org", 403, f"{p.sub!r} is not a person <org>/<name>")
    return org, p.sub


def _draft_holders(room: rooms.Room, p: Principal) -> list[str]:
    """Whose drafts the caller may see here: their own, and the org's ambient agent's if
    they administer the room's org."""
    holders = [p.sub]
    if room.scope == "org" and room.org == p.org and "admin" in p.roles:
        holders.append(rooms.ORG)
    return holders


def _line(line: StoredLine) -> rooms.Line:
    return rooms.Line(
        transport=line.transport,
        address=line.address,
        state="connected",
        connected_at=datetime.fromisoformat(line.connected_at),
    )
