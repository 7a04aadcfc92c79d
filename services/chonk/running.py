"""One run on a simulation tenant, however it was started: the harness, then each of its
actions carried out by its class (told, chased, proposed, packeted, handed off or made
ready for its connector), its memory written and its report stored, each recorded first."""

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import chonk, rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.model import Scripted
from services.chonk.carrying import told
from services.chonk.covering import Covering
from services.chonk.domain import classes, ladder, receipts, tone, triage
from services.chonk.domain.charters import skinned
from services.chonk.domain.prompt import TenantDirection
from services.chonk.domain.run import configure
from services.chonk.domain.types import Draft, ProposedAction, RoleCharter
from services.chonk.harness import ModelOutputInvalid, Outcome, run
from services.chonk.remembering import Remembering
from services.chonk.simulations import run_of, script, tenant
from services.chonk.store import ChonkStore, Proposal

__all__ = ["RUN_LEASE", "Running", "tenant_for"]

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


class Running(Covering, Remembering):
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

    async def _voice(self, org: str, data: dict[str, Any]) -> chonk.Voice:
        """The org's voice for its Chonks: as an admin set it, else the tenant's own dial;
        each Chonk as the org calls and draws it, else as its charter does."""
        chosen = await self._store.voice(org) or chonk.SetVoice(
            tone=msgspec.convert(data.get("tone", {}), chonk.TonePolicy)
        )
        charters = self._charters.values()
        return chonk.Voice(
            tone=chosen.tone,
            in_force={context: tone.ceiling(chosen.tone, context) for context in tone.CEILING},
            chonks={c.chonk_id: _skin(skinned(c, chosen.chonks.get(c.chonk_id))) for c in charters},
            charters={c.chonk_id: _skin(c) for c in charters},
        )

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
        voice = await self._voice(p.org, data)
        resolved = tone.tone(voice.tone, r["context"], r["surface"])
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
                msgspec.structs.replace(run_of(r, resolved), tenant=p.org),
                charter=skinned(charter, voice.chonks[charter.chonk_id]),
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
            body=outcome.draft.body,
            name=voice.chonks[charter.chonk_id].name or "",
            context=r["context"],
            tone=resolved,
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


def _skin(charter: RoleCharter) -> chonk.ChonkSkin:
    voice = charter.voice
    return chonk.ChonkSkin(
        name=voice.display_name, species=voice.species, signature_phrases=voice.signature_phrases
    )


def _said(text: str) -> Draft:
    return Draft(step_id="followup", surface="chat", body=text)


def tenant_for(name: str, p: Principal, what: str) -> dict[str, Any]:
    """The simulation tenant an admin of the org it is names."""
    if p.is_agent or "admin" not in p.roles:
        raise Refused("admin-only", 403, f"only an admin of {p.org} {what}")
    if name != p.org:
        raise Refused("tenant-not-found", 404, f"{p.org} has no simulation {name}")
    try:
        return tenant(name)
    except FileNotFoundError:
        raise Refused("tenant-not-found", 404, f"no simulation tenant {name}") from None
