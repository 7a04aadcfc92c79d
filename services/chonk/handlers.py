"""One handler per `tether.chonk.*` subject: a run on a simulation tenant, its report, and a
person's knows page with what they may do to a fact about them. Every memory read and write
is recorded before it happens (§6.4, §6.5)."""

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import chonk, codec, rooms, scheduler
from libs.contracts.chonk import CONTRACT
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.model import Scripted
from libs.runtime.calls import call
from libs.runtime.service import Handler
from services.chonk.domain import classes, handoffs, ladder, memory, receipts, triage
from services.chonk.domain.prompt import TenantDirection
from services.chonk.domain.run import configure
from services.chonk.domain.types import Draft, ProposedAction, RoleCharter, SourceRef
from services.chonk.harness import ModelOutputInvalid, run
from services.chonk.simulations import run_of, script, tenant
from services.chonk.store import ChonkStore

__all__ = ["FOLLOWUP", "Handlers"]

FOLLOWUP = "followup"

Clock = Callable[[], datetime]


class Handlers:
    def __init__(
        self,
        nc: Client,
        store: ChonkStore,
        trail: Trail,
        charters: Mapping[str, RoleCharter],
        never: frozenset[str],
        clock: Clock,
    ) -> None:
        self._nc, self._js, self._store = nc, nc.jetstream(), store
        self._trail, self._clock = trail, clock
        self._charters, self._never = charters, never

    async def start(self, req: chonk.StartRun, p: Principal) -> chonk.RunReport:
        if p.is_agent or "admin" not in p.roles:
            raise Refused("admin-only", 403, f"only an admin of {p.org} starts a Chonk's run")
        if req.tenant != p.org:
            raise Refused("tenant-not-found", 404, f"{p.org} has no simulation {req.tenant}")
        try:
            data = tenant(req.tenant)
        except FileNotFoundError:
            raise Refused("tenant-not-found", 404, f"no simulation tenant {req.tenant}") from None
        spec = data["runs"].get(req.run)
        if spec is None:
            raise Refused("run-not-found", 404, f"{req.tenant} has no run {req.run}")
        r = spec["run"]
        charter = self._charters[r["chonk"]]
        await self._fixtures(p, data.get("memory", []))
        bundle = await self._context(p, r)
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
        people = spec.get("people", {})
        hours = msgspec.convert(data["businessHours"], ladder.BusinessHours)
        delivered = []
        for i, (a, class_) in enumerate(zip(outcome.actions, classes_, strict=True)):
            to = people.get(a.to) or (r["subject"] if a.to == r["recipient"] else None)
            key = f"{r['id']}-{i}"
            if a.kind == "HANDOFF":  # always AUTONOMOUS: nothing leaves the system
                delivered.append(await self._hand_off(p, r, charter, a, outcome.receipt.id, i))
            elif to is None:
                continue  # no one the tenant knows by that name: nothing is carried out
            elif a.kind.startswith("SEND_MESSAGE:") and class_ == "PROPOSE_CONFIRM":
                delivered.append(
                    await self._propose(p, charter, a, to, message, key, decider=data["owner"])
                )
            elif a.kind.startswith("SEND_MESSAGE:") and class_ == "AUTONOMOUS":
                delivered.append(await self._tell(p, charter, a, to, message, key))
            elif a.kind == "SCHEDULE_FOLLOWUP" and class_ == "AUTONOMOUS":
                follow = receipts.chat(_said(a.text), outcome.receipt)
                delivered.append(await self._follow_up(p, charter, a, to, follow, key, hours))
        if r.get("channel") == "owner":  # symmetry: the owner's words about a person are theirs
            written += await self._owner_reports(p, r, people, outcome)
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
        )
        async with self._trail.change(
            p.org, actor=p, action="chonk.run", target=report.id, data={"chonk": report.chonk}
        ):
            await self._store.put_report(p.org, report)
        return report

    async def _tell(
        self,
        p: Principal,
        charter: RoleCharter,
        action: ProposedAction,
        person: str,
        text: str,
        key: str,
    ) -> dict[str, Any]:
        """An AUTONOMOUS message carried out: the Chonk, a bot of the tenant, tells its
        recipient in the room the two share (the run's message, with its receipts)."""
        told = await self._send(_told(p.org, charter, person, text, key))
        return {"kind": action.kind, "to": person, "room": told.room, "seq": told.seq}

    async def _follow_up(
        self,
        p: Principal,
        charter: RoleCharter,
        action: ProposedAction,
        person: str,
        text: str,
        key: str,
        hours: ladder.BusinessHours,
    ) -> dict[str, Any]:
        """§3.3's next stage: a timer on the scheduler, due after the stage's wait counted in
        the tenant's business hours; when it fires, the Chonk tells the person."""
        due = ladder.due(self._clock(), ladder.STAGES[1].wait_hours, hours)
        told = _told(p.org, charter, person, text, f"followup-{key}")
        timer = scheduler.Schedule(key=f"followup.{key}", due_at=due, target=FOLLOWUP, payload=told)
        await call(self._nc, scheduler.SCHEDULE, timer, caller=CONTRACT.name)
        return {"kind": action.kind, "to": person, "timer": timer.key, "due_at": due.isoformat()}

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

    async def _propose(
        self,
        p: Principal,
        charter: RoleCharter,
        action: ProposedAction,
        person: str,
        text: str,
        key: str,
        *,
        decider: str,
    ) -> dict[str, Any]:
        """PROPOSE_CONFIRM: the message waits for its decider's yes, asked in the room the
        decider shares with the Chonk; nothing reaches the recipient until then."""
        question = f"I'd send this to {action.to} ({action.kind}). Send it?\n\n{text}"
        asked = await self._send(
            _told(p.org, charter, decider, question, f"propose-{key}", ("Send it", "Don't send"))
        )
        await self._store.put_proposal(
            asked.room, asked.seq, _told(p.org, charter, person, text, key)
        )
        return {
            "kind": action.kind,
            "to": person,
            "class": "PROPOSE_CONFIRM",
            "decider": decider,
            "room": asked.room,
            "seq": asked.seq,
        }

    async def decided(self, room: str, seq: int, choice: rooms.Choice) -> None:
        """The decider's answer to a proposal, however it came: yes tells the recipient
        (once, by the proposal's key), anything else sends nothing; recorded either way."""
        held = await self._store.proposal(room, seq)
        if held is None:
            return  # a question that is not a Chonk's proposal
        approved = isinstance(choice, rooms.Pick) and choice.option == 0
        action = "chonk.proposal.approve" if approved else "chonk.proposal.decline"
        bot = Principal(org=held.org, sub="service:chonk", act=f"bot:{held.org}:{held.bot}")
        async with self._trail.change(held.org, actor=bot, action=action, target=held.key):
            if approved:
                await self._send(held)
        await self._store.drop_proposal(room, seq)

    async def _hand_off(
        self,
        p: Principal,
        r: dict[str, Any],
        charter: RoleCharter,
        action: ProposedAction,
        receipt: str,
        index: int,
    ) -> dict[str, Any]:
        """§8: a handoff is data on the bus, on the run's correlation id, recorded first;
        the receiving Chonk decides whether to take it."""
        try:
            request = msgspec.convert(
                {
                    "id": f"hnd_{r['id']}_{index}",
                    "tenantId": p.org,
                    "fromChonk": charter.chonk_id,
                    "toChonk": action.to,
                    "reason": action.reason or "other",
                    "subjectRefs": [r["subject"]],
                    "requestedAction": action.text,
                    "receiptId": receipt,
                    "correlationId": r["id"],
                    "createdByRunId": r["id"],
                },
                chonk.HandoffRequest,
            )
        except msgspec.ValidationError as exc:
            raise Refused("model-output-invalid", 422, f"handoff {index}: {exc}") from exc
        async with self._trail.change(
            p.org, actor=p, action="chonk.handoff.request", target=request.id,
            data={"to": request.to_chonk, "reason": request.reason},
        ):  # fmt: skip
            await self._publish(chonk.HANDOFF_REQUESTED.name, request, request.id)
        return {"kind": action.kind, "to": request.to_chonk, "handoff": request.id}

    async def received(self, request: chonk.HandoffRequest) -> None:
        """The receiver's first check (§8's table and its conditions, read from what the
        tenant knows of the subject), then its answer on the bus; a pair that disagreed
        twice goes to Chonksworth's triage."""
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
        me = Principal(org=request.tenant_id, sub="service:chonk")
        action = "chonk.handoff.accept" if decision.accepted else "chonk.handoff.decline"
        async with self._trail.change(
            request.tenant_id, actor=me, action=action, target=request.id,
            data={"reason": decision.reason},
        ):  # fmt: skip
            if not decision.accepted:
                await self._store.put_decline(request)
        event = chonk.HANDOFF_ACCEPTED if decision.accepted else chonk.HANDOFF_DECLINED
        await self._publish(event.name, decided, f"decided-{request.id}")
        if decision.accepted:
            return
        declines = await self._store.declines(request.tenant_id)
        pair = tuple(sorted((request.from_chonk, request.to_chonk)))
        if pair in handoffs.to_triage(declines):
            ids = sorted(
                d.id for d in declines if tuple(sorted((d.from_chonk, d.to_chonk))) == pair
            )
            triage = chonk.Triage(tenant=request.tenant_id, pair=pair, handoffs=ids)  # type: ignore[arg-type]
            await self._publish(
                chonk.TRIAGE_OPENED.name, triage, f"triage-{request.tenant_id}-{'-'.join(ids)}"
            )

    async def _publish(self, subject: str, event: msgspec.Struct, msg_id: str) -> None:
        await self._js.publish(subject, codec.encode(event), headers={"Nats-Msg-Id": msg_id})

    async def followed_up(self, fired: scheduler.Fired) -> None:
        """A follow-up's timer fired: the Chonk tells the person, once, recorded first."""
        told = msgspec.convert(fired.payload, rooms.Tell)
        bot = Principal(org=told.org, sub=told.person, act=f"bot:{told.org}:{told.bot}")
        async with self._trail.change(
            told.org, actor=bot, action="chonk.followup.send", target=told.key
        ):
            await self._send(told)

    async def _send(self, told: rooms.Tell) -> rooms.Message:
        return await call(self._nc, rooms.TELL, told, caller=CONTRACT.name)

    async def report(self, req: chonk.RunRef, p: Principal) -> chonk.RunReport:
        found = await self._store.report(p.org, req.id) if "admin" in p.roles else None
        if found is None:
            raise Refused("run-not-found", 404, f"no run {req.id}")
        return found

    async def knows(self, _: chonk.GetKnows, p: Principal) -> chonk.Knows:
        """§6.4: what the Chonks know about me, and every read of it."""
        facts = await self._store.facts(p.org, p.sub)
        return chonk.Knows(
            facts=[_known(f) for f in sorted(facts, key=lambda f: f.id)],
            reads=await self._store.reads(p.org, p.sub),
        )

    async def answer(self, req: chonk.MemoryAnswer, p: Principal) -> chonk.KnownFact:
        """Redaction by the subject (§6.2's last column): gone at once where it may be;
        feedback keeps the person's answer and its deletion becomes the MoR's decision."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a fact about a person is theirs to redact")
        now = self._clock()
        outcome: dict[str, memory.Redacted] = {}

        def redact(fact: memory.MemoryFact | None) -> memory.MemoryFact | None:
            if fact is None:
                raise Refused("fact-not-found", 404, f"there is no fact {req.id} about you")
            outcome["done"] = memory.redacted(fact, req.response, now)
            return outcome["done"].fact

        async with self._trail.change(p.org, actor=p, action="chonk.memory.redact", target=req.id):
            after = await self._store.change_fact(p.org, p.sub, req.id, redact)
        assert after is not None
        if (decision := outcome["done"].decision) is not None:
            await self._trail.append(
                p.org,
                actor=p,
                action="chonk.decision.open",
                target=req.id,
                data={"decision": decision, "for": "mor"},
            )
        return _known(after)

    def table(self) -> Mapping[Subject, Handler]:
        return {
            chonk.START: self.start,
            chonk.REPORT: self.report,
            chonk.KNOWS: self.knows,
            chonk.ANSWER: self.answer,
        }

    async def _fixtures(self, p: Principal, fixtures: list[dict[str, Any]]) -> None:
        """A simulation tenant's memory, stored once."""
        for f in fixtures:
            fact = memory.MemoryFact(
                id=f["id"],
                tenant_id=p.org,
                subject_id=f["subject"],
                kind=f["kind"],
                content=f["content"],
                source=SourceRef(
                    n=0,
                    kind="memory",
                    ref=f"fixture:{f['id']}",
                    label="simulation fixture",
                    as_of=self._clock(),
                ),
                shared_by="chonk",
                written_by_run_id="fixture",
                written_by_chonk_id=f["writer"],
                used_for=tuple(f.get("usedFor", ())),
                evidence=(
                    SourceRef(
                        n=0, kind="message", ref="fixture", label="fixture", as_of=self._clock()
                    ),
                ),
            )
            stored = memory.committed(
                fact, writer=f["writer"], manages=True, consent=True, now=self._clock()
            )
            await self._store.change_fact(
                p.org, fact.subject_id, fact.id, lambda old, s=stored: old or s
            )

    async def _context(self, p: Principal, r: dict[str, Any]) -> dict[str, Any]:
        """§5.2, for a run about one person: their facts, read through here only, each
        read recorded before it is made and shown on their knows page."""
        subject, chonk_id = r["subject"], r["chonk"]
        facts = await self._store.facts(p.org, subject)
        readable = [
            f
            for f in facts
            if f.redacted_at is None
            and (chonk_id == "human" or not f.kind.startswith(("feedback_", "growth_plan")))
            and f.kind != "owner_report"
        ]
        read = chonk.MemoryRead(
            at=self._clock(),
            chonk=chonk_id,
            run=r["id"],
            purpose=r.get("purpose", ""),
            facts=[f.id for f in readable],
        )
        await self._trail.append(
            p.org,
            actor=p,
            action="chonk.memory.read",
            target=subject,
            data={"run": r["id"], "facts": read.facts},
        )
        await self._store.read_by(p.org, subject, read)
        return {
            "subject": subject,
            "memory": [{"id": f.id, "kind": f.kind, "content": f.content} for f in readable],
        }

    async def _owner_reports(
        self, p: Principal, r: dict[str, Any], people: dict[str, str], outcome: Any
    ) -> list[str]:
        """§6.5: anything written to the owner about a person is that person's owner_report,
        in the same commit, recorded like any other write."""
        reports = memory.owner_reports(
            outcome.draft.body,
            people,
            source=_source(outcome.receipt.id, self._clock()),
            run=r["id"],
            tenant=p.org,
        )
        for fact in reports:
            await self._commit(p, fact, writer="executor")
        return [f.id for f in reports]

    async def _write(
        self, p: Principal, r: dict[str, Any], w: dict[str, Any], chonk_id: str, receipt: str
    ) -> str:
        """§6.5: at memory.commit, filtered through the table, recorded before it is stored."""
        fact = memory.MemoryFact(
            id=f"mem_{r['id']}_{w['kind']}",
            tenant_id=p.org,
            subject_id=r["subject"],
            kind=w["kind"],
            content=w["content"],
            source=_source(receipt, self._clock()),
            shared_by="chonk",
            written_by_run_id=r["id"],
            written_by_chonk_id=chonk_id,
        )
        await self._commit(p, fact, writer=w["writer"])
        return fact.id

    async def _commit(self, p: Principal, fact: memory.MemoryFact, *, writer: str) -> None:
        """A fact through §6.2's table, recorded, then stored."""
        try:
            stored = memory.committed(
                fact, writer=writer, manages=True, consent=False, now=self._clock()
            )
        except memory.MemoryRefused as exc:
            raise Refused("memory-refused", 422, str(exc)) from exc
        async with self._trail.change(
            p.org,
            actor=p,
            action="chonk.memory.write",
            target=fact.subject_id,
            data={"fact": fact.id, "kind": fact.kind},
        ):
            await self._store.change_fact(p.org, fact.subject_id, fact.id, lambda _: stored)


def _told(
    org: str,
    charter: RoleCharter,
    person: str,
    text: str,
    key: str,
    options: tuple[str, ...] = (),
) -> rooms.Tell:
    """What the Chonk, a bot of the tenant, tells `person`, stored once by `key`: sent now,
    held as a follow-up's timer payload, or held for a decider's yes."""
    return rooms.Tell(
        org=org,
        person=person,
        bot=f"chonk-{charter.chonk_id}",
        title=charter.title,
        text=text,
        key=key,
        options=options,
    )


def _said(text: str) -> Draft:
    return Draft(step_id="followup", surface="chat", body=text)


def _source(receipt: str, now: datetime) -> SourceRef:
    return SourceRef(n=0, kind="message", ref=receipt, label="this run", as_of=now)


def _known(f: memory.MemoryFact) -> chonk.KnownFact:
    return chonk.KnownFact(
        id=f.id,
        kind=f.kind,
        content="" if f.redacted_at else f.content,
        visibility=f.visibility,
        written_by=f.written_by_chonk_id,
        used_for=list(f.used_for),
        expires_at=f.expires_at,
        response=f.subject_response,
        redacted=f.redacted_at is not None,
    )
