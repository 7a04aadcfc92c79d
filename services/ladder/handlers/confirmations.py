"""Confirmations: the questions asked of the person, and what their answer sends
(hip-0524 §6)."""

import msgspec

from libs.contracts import ladder, rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from libs.runtime.kv import Conflict
from services.ladder.handlers.common import ME, Ladder

__all__ = ["Confirmations"]


class Confirmations(Ladder):
    async def confirmations(
        self, _: ladder.ListConfirmations, p: Principal
    ) -> ladder.ConfirmationList:
        person = await self._person(p, "read confirmations")
        open_ = [
            ladder.PendingConfirmation(
                id=c.id,
                room=c.room,
                question_seq=c.question_seq,
                reply_to=c.reply_to,
                candidates=c.candidates,
            )
            for c in await self._store.confirmations(person)
            if c.state == "open"
        ]
        return ladder.ConfirmationList(confirmations=sorted(open_, key=lambda c: c.question_seq))

    async def confirm(self, req: ladder.ConfirmationAnswer, p: Principal) -> ladder.Routed:
        """Answer in the room (the answer is stored there, as if given there), then act."""
        person = await self._person(p, "answer a confirmation")
        found = await self._store.confirmation(person, req.id)
        if found is None:
            raise Refused("confirmation-not-found", 404, f"you have no confirmation {req.id}")
        c = found[0]
        answer = rooms.AnswerQuestion(id=c.room, seq=c.question_seq, choice=req.choice)
        me = Principal(org=c.org, sub=person)
        stored: rooms.Message = await call(self._nc, rooms.ANSWER, answer, caller=ME, principal=me)
        sent = await self.answered(c.room, c.question_seq, req.choice)
        level = ladder.Decided(
            level="confirm",
            action="confirm",
            window=None,
            reason=f"answered by message {stored.seq}",
        )
        return ladder.Routed(decision=level, confirmation=c.id, sent_seq=sent)

    async def answered(self, room: str, seq: int, choice: rooms.Choice) -> int | None:
        """A confirmation's answer, however it came: the chosen text leaves once."""
        asked = await self._store.asked(room, seq)
        if asked is None:
            return None  # a question that is not a ladder's confirmation
        found = await self._store.confirmation(*asked)
        if found is None:
            return None
        c, revision = found
        if c.sent_seq is not None:
            return c.sent_seq  # carried out already
        outcome = {rooms.Pick: "picked", rooms.Edit: "edited", rooms.Decline: "declined"}
        settled = msgspec.structs.replace(c, state=outcome[type(choice)])
        try:
            async with self._trail.change(
                c.org,
                actor=Principal(org=c.org, sub=c.person),
                action="ladder.confirmation.answer",
                target=c.id,
                data={"outcome": settled.state, "room": c.room},
            ):
                revision = await self._store.settle(settled, revision)
        except Conflict:
            found = await self._store.confirmation(*asked)  # settled by the other path
            assert found is not None
            settled, revision = found
        match choice:
            case rooms.Pick(option=i):
                sent = await self._deliver(
                    c.org,
                    c.room,
                    c.person,
                    c.reply_to,
                    "message",
                    f"picked-{c.id}",
                    c.candidates[i],
                )
            case rooms.Edit(text=text):
                sent = await self._deliver(
                    c.org, c.room, c.person, c.reply_to, "own", f"edited-{c.id}", text, edited=True
                )
            case _:
                return None
        try:  # the key above stored it once; this spares a later repeat the round trip
            await self._store.settle(msgspec.structs.replace(settled, sent_seq=sent.seq), revision)
        except Conflict:
            pass
        return sent.seq
