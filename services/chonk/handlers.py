"""One handler per `tether.chonk.*` subject: a run on a simulation tenant (started by an
admin, by a cadence's timer, or by an accepted handoff), its report, a person's message to
a Chonk, and a decider's packets; a person's knows page and their answer to a fact about
them are `remembering.py`'s, what a run carries out `carrying.py`'s and a call-out
`covering.py`'s."""

import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import chonk, rooms, scheduler
from libs.contracts.chonk import CONTRACT
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.model import Scripted
from libs.runtime import pages
from libs.runtime.calls import call
from libs.runtime.kv import Conflict
from libs.runtime.service import Handler
from services.chonk.carrying import Lapse, told
from services.chonk.covering import Covering
from services.chonk.domain import (
    cadences,
    classes,
    handoffs,
    intents,
    ladder,
    receipts,
    triage,
)
from services.chonk.domain.prompt import TenantDirection
from services.chonk.domain.run import configure
from services.chonk.domain.types import Draft, ProposedAction, RoleCharter
from services.chonk.harness import ModelOutputInvalid, Outcome, run
from services.chonk.remembering import Remembering
from services.chonk.simulations import run_of, script, tenant
from services.chonk.store import ChonkStore, Proposal

__all__ = ["CADENCE", "Handlers"]

CADENCE = "cadence"
# Far longer than a run takes, and well inside the two minutes a delivery is retried: a
# run whose claimer died is taken over by a redelivery.
RUN_LEASE = timedelta(minutes=1)

Clock = Callable[[], datetime]


class _Carried(NamedTuple):
    """A run's outcome, as its actions are carried out."""

    org: str
    r: dict[str, Any]
    spec: dict[str, Any]
    data: dict[str, Any]
    charter: RoleCharter
    outcome: Outcome
    message: str
    correlation: str
    now: datetime


class Handlers(Covering, Remembering):
    def __init__(
        self,
        nc: Client,
        store: ChonkStore,
        trail: Trail,
        charters: Mapping[str, RoleCharter],
        never: frozenset[str],
        clock: Clock,
    ) -> None:
        super().__init__(nc, store, trail, clock)
        self._charters, self._never = charters, never

    async def start(self, req: chonk.StartRun, p: Principal) -> chonk.RunReport:
        data = _tenant_for(req.tenant, p, "starts a Chonk's run")
        spec = data["runs"].get(req.run)
        if spec is None:
            raise Refused("run-not-found", 404, f"{req.tenant} has no run {req.run}")
        return await self._run(p, data, spec, run_id=spec["run"]["id"], trigger="objective")

    async def cadence(self, req: chonk.StartCadence, p: Principal) -> chonk.CadenceStarted:
        """A cadence started, recorded first; one that runs already is answered as it
        runs. Its next time is timed either way: a start whose replica died before it
        timed it is made whole by the same start asked again."""
        data = _tenant_for(req.tenant, p, "starts a cadence")
        cadence = _cadence(data, req.tenant, req.cadence)
        now = self._clock()

        def record(_: object, __: object) -> AbstractAsyncContextManager[object]:
            return self._trail.change(
                p.org, actor=p, action="chonk.cadence.start", target=req.cadence,
                data={"run": cadence.run},
            )  # fmt: skip

        _, since = await self._store.change_cadence(
            p.org, req.cadence, lambda running: running or now, record=record
        )
        assert since is not None
        timer = await self._cadence_timer(p.org, req.cadence, cadence, now)
        return _running(req.cadence, cadence, since, timer)

    async def list_cadences(self, _: chonk.ListCadences, p: Principal) -> chonk.CadenceList:
        data = _tenant_for(p.org, p, "reads its cadences")
        now = self._clock()
        running = await self._store.cadences(p.org)
        listed = []
        for name, since in sorted(running.items()):
            cadence = _cadence(data, p.org, name)
            timer = _timer_of(p.org, name, cadences.next_at(cadence, now))
            listed.append(_running(name, cadence, since, timer))
        return chonk.CadenceList(cadences=listed)

    async def stop_cadence(self, req: chonk.StopCadence, p: Principal) -> chonk.CadenceStopped:
        """Stopped, recorded first: a time that comes round after runs nothing. Its next
        timer is cancelled too, so the scheduler holds nothing for it."""
        data = _tenant_for(p.org, p, "stops a cadence")
        cadence = _cadence(data, p.org, req.cadence)

        def record(since: datetime, _: None) -> AbstractAsyncContextManager[object]:
            return self._trail.change(
                p.org, actor=p, action="chonk.cadence.stop", target=req.cadence,
                data={"run": cadence.run, "since": since.isoformat()},
            )  # fmt: skip

        before, _ = await self._store.change_cadence(
            p.org, req.cadence, lambda _: None, record=record
        )
        if before is not None:
            due = cadences.next_at(cadence, self._clock())
            timer = scheduler.Cancel(key=_timer_of(p.org, req.cadence, due).key)
            try:
                await call(self._nc, scheduler.CANCEL, timer, caller=CONTRACT.name)
            except Refused as exc:
                if exc.problem.rule != "timer-not-found":
                    raise  # none yet: a time under way times it, and it will run nothing
        return chonk.CadenceStopped(cadence=req.cadence, was_running=before is not None)

    async def _cadence_timer(
        self, org: str, name: str, cadence: cadences.Cadence, after: datetime
    ) -> scheduler.Schedule:
        return await self._timed(_timer_of(org, name, cadences.next_at(cadence, after)))

    async def cadence_due(self, fired: scheduler.Fired) -> None:
        """A cadence came round: the next time timed, then its run, once for this time.
        Timed first, a run that fails every try, or is refused, leaves the cadence coming
        round; timing it again is harmless (the timer's key is the time). One stopped
        runs nothing and times nothing."""
        due = msgspec.convert(fired.payload, _CadenceDue)
        if await self._store.running_since(due.org, due.cadence) is None:
            return
        data = tenant(due.org)
        cadence = msgspec.convert(data["cadences"][due.cadence], cadences.Cadence)
        spec = data["runs"][cadence.run]
        run_id = cadences.run_id(cadence, spec["run"]["id"], fired.due_at)
        me = Principal(org=due.org, sub=f"service:{CONTRACT.name}")
        # From now, if this time is handled late (the service away across the next): the
        # next is never in the past, which the scheduler refuses, and the times missed
        # meanwhile are not run one after another.
        after = max(fired.due_at, self._clock())
        await self._cadence_timer(due.org, due.cadence, cadence, after)
        await self._once(me, data, spec, run_id=run_id, trigger="cadence")

    async def _once(self, p: Principal, data: dict[str, Any], spec: dict[str, Any], *,
                    run_id: str, **how: Any) -> None:  # fmt: skip
        """A run a delivered event starts: claimed first, so a redelivery handled at the
        same time runs nothing; released if it fails, so the next delivery runs it. Claimed
        and not reported, it is under way or its claimer died: asked again later, it is
        taken over once the claim's lease is out. Reported, it is never run again while
        its claim is kept."""
        if not await self._store.claim_run(p.org, run_id, self._clock(), lease=RUN_LEASE):
            if await self._store.report(p.org, run_id) is None:
                raise Refused("run-under-way", 503, f"run {run_id} is under way; ask again")
            return
        try:
            await self._run(p, data, spec, run_id=run_id, **how)
        except BaseException:
            await self._store.release_run(p.org, run_id)
            raise
        await self._store.finish_run(p.org, run_id)

    async def _run(
        self,
        p: Principal,
        data: dict[str, Any],
        spec: dict[str, Any],
        *,
        run_id: str,
        trigger: Literal["objective", "cadence", "handoff"],
        correlation: str | None = None,
        handoff: chonk.HandoffRequest | None = None,
    ) -> chonk.RunReport:
        """One run of the tenant's: the harness, then its actions carried out by class, its
        memory written, its report stored, each recorded first."""
        r = {**spec["run"], "id": run_id}
        correlation = correlation or run_id
        charter = self._charters[r["chonk"]]
        await self._fixtures(p, data.get("memory", []))
        bundle = await self._context(p, r)
        if handoff is not None:  # the receiver's planner sees what was asked, and why
            bundle["handoff"] = {
                "from": handoff.from_chonk,
                "reason": handoff.reason,
                "requestedAction": handoff.requested_action,
                "receiptId": handoff.receipt_id,
            }
        now = self._clock()
        try:
            outcome = await run(
                msgspec.structs.replace(run_of(r), tenant=p.org),
                charter=charter,
                config=configure(charter),
                model=Scripted(script(spec["script"])),
                direction=TenantDirection(),
                bundle=bundle,
                now=now,
            )
        except ModelOutputInvalid as exc:
            raise Refused("model-output-invalid", 422, str(exc)) from exc
        written = [
            await self._write(p, r, w, charter.chonk_id, outcome.receipt.id)
            for w in spec.get("memory", [])
        ]
        message = receipts.chat(outcome.draft, outcome.receipt)
        # The tenant's function modes for this run, and what RC-MGR-01 regressed: either can
        # only take autonomy away.
        modes = {**spec.get("modes", {}), **await self._store.modes(p.org, charter.chonk_id)}
        classes_ = [classes.classified(a, never=self._never, modes=modes) for a in outcome.actions]
        carried = _Carried(p.org, r, spec, data, charter, outcome, message, correlation, now)
        delivered = [
            found
            for i, (a, class_) in enumerate(zip(outcome.actions, classes_, strict=True))
            if (found := await self._carry(carried, i, a, class_)) is not None
        ]
        if r.get("channel") == "owner":  # symmetry: the owner's words about a person are theirs
            written += await self._owner_reports(p, r, spec.get("people", {}), outcome)
        report = chonk.RunReport(
            id=r["id"],
            chonk=charter.chonk_id,
            receipt=msgspec.to_builtins(outcome.receipt),
            message=message,
            actions=[
                {**msgspec.to_builtins(a), "class": class_}
                for a, class_ in zip(outcome.actions, classes_, strict=True)
            ],
            prompts=list(outcome.prompts),
            memory=written,
            delivered=delivered,
            regressed=await self._crept(p, charter, outcome.outside, now),
            trigger=trigger,
            correlation=correlation,
        )
        async with self._trail.change(
            p.org, actor=p, action="chonk.run", target=report.id,
            data={"chonk": report.chonk, "trigger": trigger, "correlation": correlation},
        ):  # fmt: skip
            await self._store.put_report(p.org, report)
        return report

    async def _carry(
        self, run: _Carried, i: int, a: ProposedAction, class_: classes.Class
    ) -> dict[str, Any] | None:
        """One action carried out by its class; None when it names no one the tenant knows,
        so there is nothing to carry out."""
        r, charter, org = run.r, run.charter, run.org
        key = f"{r['id']}-{i}"
        if a.kind == "HANDOFF":  # always AUTONOMOUS: nothing leaves the system
            return await self._handed(run, a, i)
        to = run.spec.get("people", {}).get(a.to) or (
            r["subject"] if a.to == r["recipient"] else None
        )
        if class_ == "HUMAN_ONLY":
            if to is None:
                return None
            packet = chonk.Packet(
                id=f"pkt_{r['id']}_{i}",
                tenant=org,
                chonk=charter.chonk_id,
                decider=to,
                subject=r["subject"],
                about=r["objective"],
                text=run.message,
                receipt=run.outcome.receipt.id,
                correlation=run.correlation,
                opened_at=run.now,
            )
            return await self._packet(a, packet, charter.title)
        held = self._held(run, a, to, key)
        if held is None:
            return None
        if class_ == "PROPOSE_CONFIRM":
            return await self._propose(a, held, self._question(run, a, held), to=to)
        if held.tell is not None:
            return await self._tell(a, held.tell)
        if held.chase is not None:
            return await self._chase(a, held.chase)
        assert held.ready is not None
        return await self._ready(a, held.ready, held.key)

    def _held(self, run: _Carried, a: ProposedAction, to: str | None, key: str) -> Proposal | None:
        """What `a` becomes once it may happen: a message told, a chase started, or an
        action for its connector."""
        r, charter, org = run.r, run.charter, run.org
        decider = run.data["owner"]
        if a.kind.startswith("SEND_MESSAGE:"):
            if to is None:
                return None
            return Proposal(key=key, decider=decider, tell=told(
                org, charter.chonk_id, charter.title, to, run.message, key
            ))  # fmt: skip
        if a.kind == "SCHEDULE_FOLLOWUP":
            if to is None:
                return None
            return Proposal(key=key, decider=decider, chase=self._chase_of(run, a, to))
        ready = chonk.ActionReady(
            tenant=org,
            chonk=charter.chonk_id,
            run=r["id"],
            correlation=run.correlation,
            action=msgspec.to_builtins(a),
        )
        return Proposal(key=key, decider=decider, ready=ready)

    def _chase_of(self, run: _Carried, a: ProposedAction, owner: str) -> ladder.Chase:
        """§3.3's ladder for `owner`, from what the tenant knows: what waits, for whom, and
        who is the owner's manager of record."""
        known = run.spec.get("chase")
        if known is None:
            raise Refused(
                "chase-unknown",
                422,
                f"{run.r['id']}: the tenant names no requester and manager for this chase",
            )
        people = run.spec.get("people", {})
        receipt = run.outcome.receipt
        return ladder.Chase(
            org=run.org,
            chonk=run.charter.chonk_id,
            title=run.charter.title,
            run=run.r["id"],
            item=known["item"],
            owner=owner,
            owner_name=a.to,
            requester=people[known["requester"]],
            requester_name=known["requester"],
            mor=people[known["mor"]],
            followup=receipts.chat(_said(a.text), receipt),
            receipts=receipts.block(receipt),
            hours=msgspec.convert(run.data["businessHours"], ladder.BusinessHours),
        )

    def _question(self, run: _Carried, a: ProposedAction, held: Proposal) -> rooms.Tell:
        """The decider's question for a PROPOSE_CONFIRM: yes first."""
        if held.tell is not None:
            text = f"I'd send this to {a.to} ({a.kind}). Send it?\n\n{held.tell.text}"
            options = ("Send it", "Don't send")
        else:
            text = f"I'd like to do this ({a.kind}, {a.to}): {a.text or ''} Go ahead?"
            options = ("Go ahead", "Don't")
        charter = run.charter
        return told(
            run.org, charter.chonk_id, charter.title, held.decider, text, f"propose-{held.key}",
            options,
        )  # fmt: skip

    async def _crept(
        self, p: Principal, charter: RoleCharter, outside: Sequence[str], now: datetime
    ) -> bool:
        """RC-MGR-01: actions outside the allowlist recorded; a Chonk with three in a week
        has every function regressed to PROPOSE, stored as the tenant's modes for it."""
        if not outside:
            return False
        chonk_id = charter.chonk_id
        async with self._trail.change(
            p.org, actor=p, action="chonk.outside.record", target=chonk_id,
            data={"kinds": list(outside)},
        ):  # fmt: skip
            seen = await self._store.add_outside(p.org, chonk_id, [now] * len(outside), now)
        if chonk_id not in triage.regressed([(chonk_id, at) for at in seen], now):
            return False
        modes = {kind.split(":")[0]: "PROPOSE" for kind in charter.action_allowlist}
        async with self._trail.change(
            p.org, actor=p, action="chonk.modes.regress", target=chonk_id, data={"modes": modes}
        ):
            await self._store.put_modes(p.org, chonk_id, modes)
        return True

    async def _handed(self, run: _Carried, action: ProposedAction, index: int) -> dict:
        """A run's HANDOFF as §8's request, on the run's correlation id."""
        r = run.r
        try:
            request = msgspec.convert(
                {
                    "id": f"hnd_{r['id']}_{index}",
                    "tenantId": run.org,
                    "fromChonk": run.charter.chonk_id,
                    "toChonk": action.to,
                    "reason": action.reason or "other",
                    "subjectRefs": [r["subject"]],
                    "requestedAction": action.text,
                    "receiptId": run.outcome.receipt.id,
                    "correlationId": run.correlation,
                    "createdByRunId": r["id"],
                },
                chonk.HandoffRequest,
            )
        except msgspec.ValidationError as exc:
            raise Refused("model-output-invalid", 422, f"handoff {index}: {exc}") from exc
        return await self._hand_off(request)

    async def decided(self, room: str, seq: int, choice: rooms.Choice) -> None:
        """An answer to one of the Chonks' questions (only the person asked can answer
        it), to whichever asked it: a chase's, a shift's offer, or a proposal's."""
        if (chased := await self._store.chased(room, seq)) is not None:
            await self._chase_answered(chased, choice)
        elif (offer := await self._store.offer(room, seq)) is not None:
            await self._offer_answered(offer, choice)
        elif (held := await self._store.proposal(room, seq)) is not None:
            try:
                await self._proposal_answered(room, seq, held, choice)
            except Refused as exc:
                if exc.problem.status < 500:  # refused again if asked again
                    await self._proposal_undone(room, seq)
                raise

    async def undone(self, room: str, seq: int, choice: rooms.Choice) -> None:
        """Every try to carry out an answer to one of the Chonks' questions failed. A shift
        offer's yes carries on, so the worker, the reporter and the swap are told once the
        rooms take it: it holds the shift, and the escalation, finding it taken, tells no
        one. A proposal's decider is told it was not done. (A chase's answer is asked
        again by its next stage.)"""
        if (offer := await self._store.offer(room, seq)) is not None:
            await self._offer_answered(offer, choice)
        else:
            await self._proposal_undone(room, seq)

    async def proposal_closed(self, fired: scheduler.Fired) -> None:
        """A proposal's question closed. An answer the room took in time is carried out, as
        its event (not read yet) would carry it out; unanswered, the proposal lapses,
        recorded as no one's act, and is let go: nothing is carried out."""
        lapse = msgspec.convert(fired.payload, Lapse)
        held = await self._store.proposal(lapse.room, lapse.seq)
        if held is None:
            return  # answered, or said undone
        org = held.org
        asked = rooms.FindAnswer(org=org, room=lapse.room, person=held.decider, seq=lapse.seq)
        try:
            found: rooms.FoundAnswer = await call(
                self._nc, rooms.ANSWER_OF, asked, caller=CONTRACT.name
            )
        except Refused as exc:
            if exc.problem.status >= 500:
                raise
            found = rooms.FoundAnswer()  # its room gone: no answer came
        if found.choice is not None:
            await self.decided(lapse.room, lapse.seq, found.choice)
            return
        async with self._trail.change(
            org, actor=None, action="chonk.proposal.lapse", target=held.key
        ):
            await self._store.drop_proposal(lapse.room, lapse.seq)

    async def received(self, request: chonk.HandoffRequest) -> None:
        """The receiver's first check (§8's table and its conditions, read from what the
        tenant knows of the subject), then its answer on the bus. An accepted handoff is a
        run of the receiver's, triggered HANDOFF on the same correlation id; a pair that
        disagreed twice goes to Chonksworth's triage."""
        try:
            data = tenant(request.tenant_id)
        except FileNotFoundError:
            return  # no tenant of this name to judge it by
        seen = data.get("signals", {}).get(next(iter(request.subject_refs), ""), {})
        decision = handoffs.admitted(
            request,
            ladder_stage=seen.get("ladderStage", 0),
            stalls_30d=seen.get("stalls30d", 0),
            said=seen.get("said", False),
        )
        decided = chonk.HandoffDecided(
            request=request, accepted=decision.accepted, reason=decision.reason
        )
        me = Principal(org=request.tenant_id, sub=f"service:{CONTRACT.name}")
        action = "chonk.handoff.accept" if decision.accepted else "chonk.handoff.decline"
        if not await self._store.judged(request):  # else delivered again: recorded once
            # A delivery judging it at the same time loses the create, and its record says
            # it failed: one decision is recorded, whatever the deliveries.
            with contextlib.suppress(Conflict):
                async with self._trail.change(
                    request.tenant_id, actor=me, action=action, target=request.id,
                    data={"reason": decision.reason},
                ):  # fmt: skip
                    if decision.accepted:
                        await self._store.put_accept(request)
                    else:
                        await self._store.put_decline(request)
        event = chonk.HANDOFF_ACCEPTED if decision.accepted else chonk.HANDOFF_DECLINED
        await self._publish(request.tenant_id, event.name, decided, f"decided-{request.id}")
        if decision.accepted:
            await self._receive(me, data, request)
            return
        declines = await self._store.declines(request.tenant_id)
        pair = tuple(sorted((request.from_chonk, request.to_chonk)))
        if pair in handoffs.to_triage(declines):
            ids = sorted(
                d.id for d in declines if tuple(sorted((d.from_chonk, d.to_chonk))) == pair
            )
            triage = chonk.Triage(tenant=request.tenant_id, pair=pair, handoffs=ids)  # type: ignore[arg-type]
            await self._publish(
                request.tenant_id, chonk.TRIAGE_OPENED.name, triage, f"triage-{'-'.join(ids)}"
            )

    async def _receive(
        self, me: Principal, data: dict[str, Any], request: chonk.HandoffRequest
    ) -> None:
        """The receiver's run for an accepted handoff: the tenant's run that takes this
        kind of handoff about this person, once."""
        subject = next(iter(request.subject_refs), "")
        wanted = {"from": request.from_chonk, "reason": request.reason, "subject": subject}
        spec = next(
            (
                s
                for s in data["runs"].values()
                if s["run"]["chonk"] == request.to_chonk and s.get("onHandoff") == wanted
            ),
            None,
        )
        if spec is None:
            return  # the tenant has no run for it: the acceptance is the answer
        await self._once(
            me, data, spec, run_id=spec["run"]["id"], trigger="handoff",
            correlation=request.correlation_id, handoff=request,
        )  # fmt: skip

    async def message(self, req: chonk.ToChonk, p: Principal) -> chonk.Heard:
        """A person's message to one of their org's Chonks (IC_MESSAGE): a call-out to the
        Chief Operating Orca is covered (EC-MGR-009); anything else is not read here yet."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a person writes to their Chonks themselves")
        charter = self._charters.get(req.chonk)
        if charter is None:
            raise Refused("chonk-not-found", 404, f"there is no Chonk {req.chonk}")
        try:
            data = tenant(p.org)
        except FileNotFoundError:
            raise Refused("tenant-not-found", 404, f"no simulation tenant {p.org}") from None
        if req.chonk == "ops" and intents.CALL_OUT.search(req.text):
            return await self._call_out(p, data, charter, req.text)
        return chonk.Heard(intent="none")

    async def packets(self, req: chonk.ListPackets, p: Principal) -> chonk.PacketList:
        """The HUMAN_ONLY packets the caller decides; no one else's are read."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a packet is for the person who decides it")
        found = await self._store.packets(p.org, p.sub)
        if req.after is not None:  # a cursor that is none of theirs pages nothing of theirs
            ids = [packet.id for packet in found]
            found = found[ids.index(req.after) + 1 :] if req.after in ids else []
        page, more = pages.first(found, req.limit)
        return chonk.PacketList(packets=page, next=page[-1].id if more else None)

    async def report(self, req: chonk.RunRef, p: Principal) -> chonk.RunReport:
        found = await self._store.report(p.org, req.id) if "admin" in p.roles else None
        if found is None:
            raise Refused("run-not-found", 404, f"no run {req.id}")
        return found

    def table(self) -> Mapping[Subject, Handler]:
        return {
            chonk.START: self.start,
            chonk.CADENCE: self.cadence,
            chonk.CADENCES: self.list_cadences,
            chonk.STOP_CADENCE: self.stop_cadence,
            chonk.REPORT: self.report,
            chonk.KNOWS: self.knows,
            chonk.ANSWER: self.answer,
            chonk.PACKETS: self.packets,
            chonk.MESSAGE: self.message,
        }


class _CadenceDue(msgspec.Struct, frozen=True):
    """The payload of a cadence's timer."""

    org: str
    cadence: str


def _timer_of(org: str, name: str, due: datetime) -> scheduler.Schedule:
    return scheduler.Schedule(
        key=f"cadence.{org}.{name}.{due:%Y%m%dT%H%M}",
        due_at=due,
        target=CADENCE,
        payload=_CadenceDue(org=org, cadence=name),
    )


def _cadence(data: dict[str, Any], tenant: str, name: str) -> cadences.Cadence:
    found = data.get("cadences", {}).get(name)
    if found is None:
        raise Refused("cadence-not-found", 404, f"{tenant} has no cadence {name}")
    return msgspec.convert(found, cadences.Cadence)


def _running(
    name: str, cadence: cadences.Cadence, since: datetime, timer: scheduler.Schedule
) -> chonk.CadenceStarted:
    return chonk.CadenceStarted(
        cadence=name, run=cadence.run, since=since, next_at=timer.due_at, timer=timer.key
    )


def _tenant_for(name: str, p: Principal, what: str) -> dict[str, Any]:
    """The simulation tenant an admin of the org it is names."""
    if p.is_agent or "admin" not in p.roles:
        raise Refused("admin-only", 403, f"only an admin of {p.org} {what}")
    if name != p.org:
        raise Refused("tenant-not-found", 404, f"{p.org} has no simulation {name}")
    try:
        return tenant(name)
    except FileNotFoundError:
        raise Refused("tenant-not-found", 404, f"no simulation tenant {name}") from None


def _said(text: str) -> Draft:
    return Draft(step_id="followup", surface="chat", body=text)
