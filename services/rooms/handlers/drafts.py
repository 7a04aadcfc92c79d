"""Drafts: held for their person, sent as the person's own message or discarded."""

import msgspec

from libs.contracts import rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.kv import Conflict
from services.rooms.domain import members, messages
from services.rooms.handlers.common import Rooms, draft_holders

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
        for person in draft_holders(room, p):
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
