"""An act that decided ASK_USER, put to its person (issue 14.2): stored, asked in their own
room, and denied by a scheduler timer if no one answers. The person answers here or in the
room; either way the first answer stands, and only their yes turns the ask into ALLOW.
"""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import codec, pending, poa, rooms, scheduler
from libs.contracts.agents import AgentRemoved
from libs.contracts.base import key_token
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime import logs, pages
from libs.runtime.calls import call
from libs.runtime.service import request_key
from services.poa.domain import approvals, ledger, open_asks
from services.poa.store import AskStore, GrantStore, LedgerStore

__all__ = ["ASK_EXPIRY", "Asking"]

ME = poa.CONTRACT.name
ASK_EXPIRY = "ask_expiry"
_EXPIRE, _REVOKE = "poa.ask.expire", "poa.ask.revoke"

Clock = Callable[[], datetime]


class Expiry(msgspec.Struct, frozen=True):
    org: str
    person: str
    id: str


class Asking:
    def __init__(
        self,
        nc: Client,
        grants: GrantStore,
        books: LedgerStore,
        asks: AskStore,
        trail: Trail,
        clock: Clock,
    ) -> None:
        self._nc, self._js = nc, nc.jetstream()
        self._grants, self._books, self._asks = grants, books, asks
        self._trail, self._clock = trail, clock

    async def put(
        self, record: poa.GrantRecord, decision: poa.Decision, envelope: dict[str, Any], agent: str
    ) -> poa.AskRecord:
        """Stored, its expiry timed, asked in the person's room: each step safe to repeat,
        so an agent sending the act again finishes whatever a failure left undone. Timed
        before it is asked, so an ask whose question failed (the rooms away) still
        expires, and its place is let go, if the agent never sends the act again."""
        ask = approvals.opened(record, decision, envelope, agent, self._clock())
        found = await self._asks.get(ask.org, ask.person, ask.id)
        if found is None:
            await self._hold(ask)
        ask = found or await self._asks.create(
            ask,
            record=lambda _, a: self._trail.change(
                a.org,
                actor=Principal(org=a.org, sub=a.person, act=a.agent),
                action="poa.ask.open",
                target=a.id,
                data={"grant": a.grant_id, "rule_id": a.rule_id, "act_id": a.act_id},
            ),
        )
        if ask.state == "open" and any(r.revoked for r in await self._chain(ask)):
            # Its grant revoked while the act was decided: the revocation may have read the
            # asks before this one was stored, so it is settled here, as it would be there.
            return await self._settle(ask, lambda a: approvals.revoked(a, self._clock()), _REVOKE)
        if ask.state != "open":
            await self._let_go(ask)
            return ask
        timer = scheduler.Schedule(
            key=f"ask.{ask.id}",
            due_at=ask.expires_at,
            target=ASK_EXPIRY,
            payload=Expiry(ask.org, ask.person, ask.id),
        )
        try:
            await call(self._nc, scheduler.SCHEDULE, timer, caller=ME)
        except Refused as exc:
            if exc.problem.type != "urn:tether:problem:due-in-past":
                raise
            return await self._settle(ask, lambda a: approvals.expired(a, self._clock()), _EXPIRE)
        if ask.question_seq is None:
            question = rooms.AskPerson(
                org=ask.org,
                person=ask.person,
                text=approvals.question(ask),
                options=approvals.OPTIONS,
                key=ask.id,
                closes_at=ask.expires_at,
            )
            asked: rooms.Message = await call(self._nc, rooms.ASK_PERSON, question, caller=ME)
            await self._asks.put_question(ask, asked.room, asked.seq)
            changed = await self._asks.change(
                ask.org, ask.person, ask.id, lambda a: approvals.placed(a, asked.room, asked.seq)
            )
            assert changed is not None
            _, ask = changed
        await self._nudge(ask)
        return ask

    async def asks(self, _: poa.ListAsks, p: Principal) -> poa.AskList:
        found, now = await self._asks.of_person(p.org, p.sub), self._clock()
        # One past its expiry, its timer late or lost, takes no answer: none to list.
        open_ = [
            a for a in found if a.state == "open" and not approvals.lapsed(a, now) and _for(a, p)
        ]
        page, more = pages.first(sorted(open_, key=lambda a: a.asked_at))
        return poa.AskList(asks=page, more=more)

    async def ask(self, req: poa.AskRef, p: Principal) -> poa.AskRecord:
        """The person's, or their agent's that asked it; anyone else finds nothing."""
        found = await self._asks.get(p.org, p.sub, req.id)
        if found is None or not _for(found, p):
            raise Refused("ask-not-found", 404, f"you have no ask {req.id}")
        return found

    async def answer(self, req: poa.AskAnswer, p: Principal) -> poa.AskRecord:
        """Answered in the room too (as if given there), so the question shows its answer."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "only the person answers what their agent asks")
        found = await self._asks.get(p.org, p.sub, req.id)
        if found is None:
            raise Refused("ask-not-found", 404, f"you have no ask {req.id}")
        if request_key() and approvals.answered_as(found, req.answer):
            # Its answer lost in a failover: answered as it stands, and charged if its
            # replica died before the charge (charged already, nothing is written).
            await self._settled(found)
            return found
        if approvals.lapsed(found, self._clock()):
            found = await self._run_out(found)
        ours = found.state == "open" and found.question_seq is not None
        if ours and found.room is not None and found.question_seq is not None:
            choice: rooms.Choice = (
                rooms.Pick(option=0) if req.answer == "approve" else rooms.Decline()
            )
            question = rooms.AnswerQuestion(id=found.room, seq=found.question_seq, choice=choice)
            try:
                await call(self._nc, rooms.ANSWER, question, caller=ME, principal=p)
            except Refused as exc:
                if exc.problem.status != 409:
                    raise
                # Answered there first, or lapsed since it was read: that decides, carried
                # out now, as its event may not have been read yet. This answer, if another,
                # would otherwise settle the ask against the one the room shows.
                found = await self._run_out(found)
                ours = False
        try:
            return await self.answered(found, req.answer)
        except Refused as exc:
            if not ours or exc.problem.status != 409:
                raise
            # Ours, carried out first by the room's own event of it, which may not have
            # charged it yet: an allowed act is on its books before the person is told.
            settled = await self.ask(poa.AskRef(id=req.id), p)
            await self._settled(settled)
            return settled

    async def answered(self, ask: poa.AskRecord, answer: str) -> poa.AskRecord:
        """The person's answer, however it came: the first stands. A yes is decided again
        on the ledger as it is now, stored, then charged (once, by the ask's id) before it
        is told."""
        now = self._clock()
        if answer == "decline":
            return await self._settle(ask, lambda a: approvals.declined(a, now))
        chain = await self._chain(ask)
        books = await self._books.read(ask.org, ask.person, chain[0].id, ledger.month_of(now))
        revoked = any(r.revoked for r in chain)
        pairs = [(r.id, r.grant) for r in chain]
        decision = approvals.outcome(
            ledger.decided(pairs, ask.envelope, books, now, revoked=revoked), ask.act_id
        )
        return await self._settle(ask, lambda a: approvals.approved(a, decision, now))

    async def expired(self, fired: scheduler.Fired) -> None:
        """Denied if still open; an approval whose charge a crash cut short is charged. A
        fire delivered again after its expiry was stored makes what follows it whole."""
        due = msgspec.convert(fired.payload, Expiry)
        found = await self._asks.get(due.org, due.person, due.id)
        if found is None:
            return
        if found.state == "open":
            await self._run_out(found)
        elif found.state == "allowed":
            await self._charge(found, await self._chain(found))
        elif found.decision is not None and found.decision.rule_id == approvals.EXPIRED:
            await self._settled(found)

    async def _run_out(self, ask: poa.AskRecord) -> poa.AskRecord:
        """An open ask's time run out, by its timer, or found so first by an answer (its
        timer late, the scheduler away, or lost, its fire parked: a yes after the expiry
        would otherwise allow the act). The person's answer in the room counts: given in
        time, as the room takes none after, its event not read yet (behind, or parked).
        Otherwise it is denied, as no one's act."""
        given = await self._given(ask)
        if given is None:
            return await self._settle(ask, lambda a: approvals.expired(a, self._clock()), _EXPIRE)
        return await self._given_in_room(ask, given)

    async def _given(self, ask: poa.AskRecord) -> rooms.Choice | None:
        """The answer the person gave the ask's question in the room, if any."""
        if ask.room is None or ask.question_seq is None:
            return None
        question = rooms.FindAnswer(
            org=ask.org, room=ask.room, person=ask.person, seq=ask.question_seq
        )
        found: rooms.FoundAnswer = await call(self._nc, rooms.ANSWER_OF, question, caller=ME)
        return found.choice

    async def revoked(
        self, p: Principal, grant_ids: set[str], *, removal: AgentRemoved | None = None
    ) -> None:
        """The person's open asks under the grants revoked, denied at once: no yes can
        allow them now, so none waits on them, holds an agent's place, or leaves its agent
        waiting out the expiry (a day by default, up to 30). Each question in the room is
        answered Decline by the person where they revoked (their revocation declines it), so
        no answer there seems to count; where an admin's `removal` of the agent revoked it,
        it is withdrawn, their agent telling them why in the answer's place (the Decline
        would be theirs, and they gave none). Asked again, this finishes what a failure
        left undone."""
        now = self._clock()
        for ask in await self._asks.of_person(p.org, p.sub):
            if ask.grant_id not in grant_ids:
                continue
            if ask.state == "open":
                ask = await self._settle(ask, lambda a: approvals.revoked(a, now), _REVOKE, p)
            revoked_ = ask.decision is not None and ask.decision.rule_id == approvals.REVOKED
            if not (revoked_ and ask.room is not None and ask.question_seq is not None):
                continue
            try:
                if removal is None:
                    question = rooms.AnswerQuestion(
                        id=ask.room, seq=ask.question_seq, choice=rooms.Decline()
                    )
                    await call(self._nc, rooms.ANSWER, question, caller=ME, principal=p)
                else:
                    await call(self._nc, rooms.WITHDRAW, _withdrawn(ask, removal), caller=ME)
            except Refused as exc:
                if exc.problem.status >= 500:
                    raise  # answered already, closed, or not the person's to answer

    async def _chain(self, ask: poa.AskRecord) -> list[poa.GrantRecord]:
        """The ask's grant and its ancestors, root first, as stored now."""
        record = await self._grants.get(ask.org, ask.person, ask.grant_id)
        if record is None:
            raise Refused("grant-not-found", 404, f"grant {ask.grant_id} is gone")
        return [*await self._grants.lineage(record), record]

    async def _charge(self, ask: poa.AskRecord, chain: list[poa.GrantRecord]) -> None:
        """An allowed ask's act charged to its whole chain, recorded with the person's
        approval as its evidence; charged already, nothing is written or recorded."""
        if ask.state != "allowed" or ask.answered_at is None:
            return
        ids = [r.id for r in chain]
        assert ask.decision is not None
        decision, at = ask.decision, ask.answered_at
        await self._books.change(
            ask.org,
            ask.person,
            ids[0],
            ledger.month_of(at),
            lambda books: ledger.approved(
                books, ask.id, decision, ids, ask.envelope, at, official=ask.official
            ),
            record=lambda _, __: self._trail.change(
                ask.org,
                actor=Principal(org=ask.org, sub=ask.person, act=ask.agent),
                action="poa.act.record",
                target=ask.grant_id,
                data={**_data(decision), "ask": ask.id, "approved_by": ask.person},
            ),
        )

    async def answered_in_room(self, room: str, seq: int, choice: rooms.Choice) -> None:
        where = await self._asks.asked(room, seq)
        if where is None:
            return  # a question that is not an ask
        found = await self._asks.get(*where)
        if found is not None:
            await self._given_in_room(found, choice)

    async def _given_in_room(self, ask: poa.AskRecord, choice: rooms.Choice) -> poa.AskRecord:
        """The person's answer in the room (any but Approve declines), carried out: the ask
        as it stands after it."""
        approve = isinstance(choice, rooms.Pick) and choice.option == 0
        answer = "approve" if approve else "decline"
        if ask.state == "open":
            try:
                return await self.answered(ask, answer)
            except Refused as exc:
                if exc.problem.rule != "ask-answered":
                    raise
            # Settled meanwhile: by this answer through the API, as it put it here, whose
            # replica may have died before it said so; or by its expiry.
            found = await self._asks.get(ask.org, ask.person, ask.id)
            assert found is not None
            ask = found
        if approvals.answered_as(ask, answer):
            await self._settled(ask)  # this answer, delivered again, or given twice
        return ask

    async def _settle(
        self,
        ask: poa.AskRecord,
        change: Callable[[poa.AskRecord], poa.AskRecord],
        action: str = "poa.ask.answer",
        by: Principal | None = None,
    ) -> poa.AskRecord:
        """The ask's outcome, recorded before it is stored, then told: on the event for the
        agent, and as a nudge for the person's pending list. It is the act of `by`, or of
        the person; an ask no one answered is declined by its timer, recorded as no one's
        act: never as the person's answer."""

        def record(_: poa.AskRecord, after: poa.AskRecord) -> AbstractAsyncContextManager[object]:
            person = Principal(org=after.org, sub=after.person)
            return self._trail.change(
                after.org,
                actor=None if action == _EXPIRE else by or person,
                action=action,
                target=after.id,
                data={"state": after.state, **_data(after.decision)},
            )

        changed = await self._asks.change(ask.org, ask.person, ask.id, change, record=record)
        assert changed is not None
        before, after = changed
        if before.state == "open" and after.state != "open":
            await self._settled(after)
        return after

    async def _settled(self, ask: poa.AskRecord) -> None:
        """What follows an ask's settling: an allowed act charged, then its place let go,
        the event for its agent, the nudge for its person. Charged first, since an agent
        told its act is allowed may act again at once, and that act must be decided on
        books that count this one. Done again when what settled it is asked again (a keyed
        answer, the room's answer or the expiry delivered again), since a failure after the
        settling (the bus in a failover) would otherwise lose them for good; the charge is
        made once by the ask's id, and the event taken once by its id within the stream's
        duplicate window."""
        if ask.state == "allowed":
            await self._charge(ask, await self._chain(ask))
        await self._let_go(ask)
        await self._js.publish(
            poa.ASK_ANSWERED.name,
            codec.encode(ask),
            headers={"Nats-Msg-Id": f"answered-{ask.id}", **logs.carried()},
        )
        await self._nudge(ask)

    async def _hold(self, ask: poa.AskRecord) -> None:
        """A place among the asks its agent has open to its person; when they are full,
        the places of asks no longer open are taken back first."""
        now = self._clock()
        try:
            await self._asks.change_places(ask, lambda places: open_asks.held(places, ask, now))
            return
        except Refused as exc:
            if exc.problem.rule != open_asks.FULL:
                raise
        places = await self._asks.places(ask)
        spent = {
            p.ask
            for p in places
            if open_asks.spent(p, await self._asks.get(ask.org, ask.person, p.ask), now)
        }
        await self._asks.change_places(
            ask,
            lambda places: open_asks.held(tuple(p for p in places if p.ask not in spent), ask, now),
        )

    async def _let_go(self, ask: poa.AskRecord) -> None:
        await self._asks.change_places(ask, lambda places: open_asks.let_go(places, ask.id))

    async def _nudge(self, ask: poa.AskRecord) -> None:
        await self._nc.publish(pending.changed(ME, ask.org, key_token(ask.person)), b"")


def _withdrawn(ask: poa.AskRecord, removal: AgentRemoved) -> rooms.Withdraw:
    assert ask.room is not None and ask.question_seq is not None
    text = (
        f"This question is withdrawn: {removal.by.sub} removed {ask.agent}, which asked to act "
        "on your grant, and it will not act. Nothing was done."
    )
    return rooms.Withdraw(
        org=ask.org, person=ask.person, room=ask.room, seq=ask.question_seq, text=text
    )


def _for(ask: poa.AskRecord, p: Principal) -> bool:
    return p.act is None or p.act == ask.agent


def _data(decision: poa.Decision | None) -> dict[str, object]:
    if decision is None:
        return {}
    return {"decision": decision.decision, "rule_id": decision.rule_id, "act_id": decision.act_id}
