"""Confirmations: the questions asked of the person, and what their answer sends
(hip-0524 §6)."""

from contextlib import AbstractAsyncContextManager

from libs.contracts import ladder, rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime import pages
from libs.runtime.calls import call
from libs.runtime.service import request_key
from services.ladder.domain import confirmations
from services.ladder.domain.confirmations import Confirmation
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
        page, more = pages.first(sorted(open_, key=lambda c: c.question_seq))
        return ladder.ConfirmationList(confirmations=page, more=more)

    async def confirm(self, req: ladder.ConfirmationAnswer, p: Principal) -> ladder.Routed:
        """Answer in the room (the answer is stored there, as if given there), then act."""
        person = await self._person(p, "answer a confirmation")
        c = await self._store.confirmation(person, req.id)
        if c is None:
            raise Refused("confirmation-not-found", 404, f"you have no confirmation {req.id}")
        answer = rooms.AnswerQuestion(id=c.room, seq=c.question_seq, choice=req.choice)
        me = Principal(org=c.org, sub=person)
        # Keyed, the room answers a retry whose answer was lost with the answer it stored.
        stored: rooms.Message = await call(
            self._nc, rooms.ANSWER, answer, caller=ME, principal=me, key=request_key()
        )
        sent = await self.answered(c.room, c.question_seq, req.choice)
        level = ladder.Decided(
            level="confirm",
            action="confirm",
            window=None,
            reason=f"answered by message {stored.seq}",
        )
        return ladder.Routed(decision=level, confirmation=c.id, sent_seq=sent)

    async def answered(self, room: str, seq: int, choice: rooms.Choice) -> int | None:
        """A confirmation's answer, however it came: the first answer stands, and what it
        sends leaves once."""
        asked = await self._store.asked(room, seq)
        if asked is None:
            return None  # a question that is not a ladder's confirmation
        person, id_ = asked

        def record(_: Confirmation, after: Confirmation) -> AbstractAsyncContextManager[object]:
            return self._trail.change(
                after.org,
                actor=Principal(org=after.org, sub=after.person),
                action="ladder.confirmation.answer",
                target=after.id,
                data={"outcome": after.state, "room": after.room},
            )

        c = await self._store.change_confirmation(
            person, id_, lambda c: confirmations.answer(c, choice), record=record
        )
        if c is None:
            return None
        if c.sent_seq is not None:
            return c.sent_seq  # carried out already
        reply = confirmations.reply(c)
        if reply is None:
            return None
        try:
            sent = await self._deliver(reply)  # its key stores it once, whoever gets here
        except Refused as exc:
            if exc.problem.status < 500:  # refused again if asked again: the person is told
                await self.unsent(room, seq, exc.problem.detail or exc.problem.rule)
            raise
        await self._store.change_confirmation(
            person, id_, lambda c: confirmations.carried_out(c, sent.seq)
        )
        return sent.seq

    async def unsent(self, room: str, seq: int, why: str) -> None:
        """What the answer to question `seq` of `room` sends was refused, or every try to
        send it failed: the confirmation says so, recorded, and the person is told, alone,
        in the room. Otherwise they would take what they chose as sent."""
        asked = await self._store.asked(room, seq)
        if asked is None:
            return
        person, id_ = asked

        def record(_: Confirmation, after: Confirmation) -> AbstractAsyncContextManager[object]:
            return self._trail.change(
                after.org,
                actor=None,
                action="ladder.confirmation.unsent",
                target=after.id,
                data={"room": after.room, "why": why[:300]},
            )

        c = await self._store.change_confirmation(
            person, id_, lambda c: confirmations.unsent(c, why[:300]), record=record
        )
        if c is None or c.unsent is None:
            return
        notice = rooms.Deliver(
            org=c.org,
            room=c.room,
            person=c.person,
            kind="notice",
            text=confirmations.UNSENT_NOTICE,
            key=f"unsent-{c.id}",
            reply_to=c.reply_to,
        )
        await self._deliver(notice)
