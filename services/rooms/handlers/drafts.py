"""Drafts: held for their person, sent as the person's own message or discarded."""

from functools import partial

from libs.contracts import rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import KeyReused, Refused
from libs.runtime import pages
from libs.runtime.service import request_key
from services.rooms.domain import drafts, members, messages
from services.rooms.handlers.common import Rooms, draft_holders, leaves, person_of

__all__ = ["Drafts"]


class Drafts(Rooms):
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
        draft = drafts.drafted(
            room, asked, req.agent, req.text, first_contact=first, now=self._clock()
        )
        held = await self._store.create_draft(draft)
        if held.state != "open" or held.person == rooms.ORG:
            return held
        # A person quicker than their agent's model has answered already: let go at once,
        # as their answer lets go a draft held before it.
        own = await self._first_after(room, asked.seq, partial(drafts.answers, room, held))
        return held if own is None else await self._let_go(room, held, own.seq)

    async def drafts(self, req: rooms.ListDrafts, p: Principal) -> rooms.DraftList:
        room = await self._room(req.id, p)
        found = []
        for person in draft_holders(room, p):
            found += await self._store.drafts(person, room.id)
        open_ = [d for d in found if d.state in drafts.WAITING]
        page, more = pages.first(sorted(open_, key=lambda d: d.reply_to))
        return rooms.DraftList(drafts=page, more=more)

    async def my_drafts(self, _: rooms.ListMyDrafts, p: Principal) -> rooms.DraftList:
        _, person = person_of(p, "read its person's drafts")
        found = [d for d in await self._store.drafts_of(person) if d.state in drafts.WAITING]
        page, more = pages.first(sorted(found, key=lambda d: d.created_at))
        return rooms.DraftList(drafts=page, more=more)

    async def send_draft(self, req: rooms.SendDraft, p: Principal) -> rooms.Message:
        """The person sends their agent's draft (or their own text in its place) as their
        own message; the draft's id makes a repeated send store nothing more. A keyed send
        whose answer was lost with its replica finds the draft sent as it asks, and is
        answered with that message."""
        room = await self._room(req.id, p)
        draft = await self._draft(room, req.draft, p)
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
        if request_key() and draft.sent_seq is not None:
            sent = await self._store.message(room.org, room.id, draft.sent_seq, reader=p.sub)
            if sent is not None and messages.same(sent, message):
                return sent
        if draft.state == "sending" and (
            stored := await self._first_after(room, draft.reply_to, partial(drafts.sent_as, draft))
        ):
            return await self._sent_before(room, draft, stored, message)
        claimed = await self._store.change_draft(draft, drafts.claimed)
        try:
            async with self._trail.change(
                room.org,
                actor=p,
                action="rooms.draft.send",
                target=draft.id,
                data={"room": room.id},
            ):
                stored = await self._store_message(room, message, msg_id=draft.id)
        except Refused as exc:
            if exc.problem.status < 500 and not isinstance(exc, KeyReused):
                await self._store.change_draft(claimed, drafts.reopened)  # nothing stored
            raise
        await self._store.change_draft(claimed, lambda d: drafts.sent(d, stored.seq))
        return stored

    async def _sent_before(
        self, room: rooms.Room, draft: rooms.Draft, stored: rooms.Message, asked: rooms.Message
    ) -> rooms.Message:
        """A send that stored its message and went no further (its replica died): carried
        on from there, never stored or sent out again. The stream knows the draft's id for
        an hour; the person may press Send again the next day."""
        line = await self._line_out(room) if leaves(room, stored) else None
        await self._store.change_draft(draft, lambda d: drafts.sent(d, stored.seq))
        if not messages.same(stored, asked):
            raise Refused(
                "draft-closed", 409, f"draft {draft.id} was sent, as message {stored.seq}"
            )
        return await self._carried(room, stored, line, again=True)

    async def discard_draft(self, req: rooms.DraftRef, p: Principal) -> rooms.Draft:
        room = await self._room(req.id, p)
        draft = await self._draft(room, req.draft, p)
        if draft.state == "discarded" and request_key():
            return draft  # its answer lost in a failover
        return await self._store.change_draft(
            draft,
            drafts.discarded,
            record=lambda _, after: self._trail.change(
                room.org,
                actor=p,
                action="rooms.draft.discard",
                target=after.id,
                data={"room": room.id},
            ),
        )
