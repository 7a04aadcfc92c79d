"""One run of a Chonk (§1, §3): the planner, each analyst and chaser step, the writer, each
through the one model interface and each handed back to the executor, which checks it;
nothing is kept between runs. The model is asked; everything else is the harness's."""

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import msgspec
from prometheus_client import Counter

from libs.model import Model
from libs.model import Prompt as ModelPrompt
from libs.runtime.metrics import child
from services.chonk.domain import executor, grounding, mirror, prompt, receipts, tone
from services.chonk.domain.run import RunConfig
from services.chonk.domain.types import (
    Draft,
    Finding,
    ProposedAction,
    Receipt,
    RoleCharter,
    StepPlan,
)

__all__ = ["ModelOutputInvalid", "Outcome", "Run", "run"]

T = TypeVar("T")

# §11's risk controls, as metrics.
OUTSIDE = Counter(
    "tether_chonk_outside_allowlist",
    "ProposedActions outside the emitting Chonk's action allowlist, dropped (RC-MGR-01).",
    ["chonk"],
)
DRAFTS = Counter("tether_chonk_drafts", "Writers' first drafts checked for grounding.", ["chonk"])
REJECTED = Counter(
    "tether_chonk_grounding_rejections",
    "First drafts the grounding check rejected (RC-MGR-02; over tether_chonk_drafts: the rate).",
    ["chonk"],
)
TONE = Counter(
    "tether_chonk_tone_above_ceiling",
    "Drafts whose tone was above the context's ceiling (RC-MGR-03).",
    ["chonk"],
)


class ModelOutputInvalid(Exception):
    """MODEL_OUTPUT_INVALID: a sub-agent's output that does not decode, or a draft that
    failed the grounding check twice."""


class Run(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    tenant: str
    objective: str
    surface: str
    tone: float
    recipient: str  # whom the draft is written to, by name
    channel: str = "ic_thread"  # where it goes: SEND_MESSAGE:<channel>, or "packet"
    managed: frozenset[str]  # the people this Chonk manages in this run
    names: frozenset[str] = frozenset()  # people and things a sentence may not name uncited
    budget_steps: int = 8
    formats: tuple[str, ...] = ("text",)  # what the message is rendered as besides text
    decisions: tuple[str, ...] = ()  # open decisions for the recipient, made by others


class Outcome(msgspec.Struct, frozen=True):
    plan: StepPlan
    findings: tuple[Finding, ...]
    receipt: Receipt
    draft: Draft
    actions: tuple[ProposedAction, ...]
    prompts: tuple[str, ...]  # the hash of every prompt the model was shown, in order
    outside: tuple[str, ...] = ()  # kinds proposed outside the allowlist, dropped (RC-MGR-01)


async def run(
    r: Run,
    *,
    charter: RoleCharter,
    config: RunConfig,
    model: Model,
    direction: prompt.TenantDirection,
    bundle: dict[str, Any],
    now: datetime,
) -> Outcome:
    shown: list[str] = []
    bundle = mirror.redacted(bundle)  # before any prompt: what may never reach a model

    async def ask(
        subagent: str, step: str, task: str, kind: type[T], errors: Sequence[str] = ()
    ) -> T:
        text = f"sub-agent: {subagent}; step: {step}\n{task}"
        if errors:
            text += "\nThe last draft was rejected: " + "; ".join(errors)
        p = prompt.build(
            charter,
            tone=r.tone,
            direction=direction,
            config=config,
            state={"run": r.id, "surface": r.surface},
            bundle=bundle,
            task=text,
            contract=f"Answer with one JSON object: {kind.__name__}.",
        )
        shown.append(p.hash)
        raw = await model.reply(ModelPrompt(system=p.text))
        try:
            return msgspec.json.decode(raw, type=kind)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ModelOutputInvalid(f"{subagent} {step}: {exc}") from exc

    plan = executor.checked_plan(
        await ask("planner", "plan", r.objective, StepPlan), config, budget_steps=r.budget_steps
    )
    receipt = Receipt(id=f"rcp_{r.id}", run_id=r.id, tenant_id=r.tenant, created_at=now)
    findings: list[Finding] = []
    actions: list[ProposedAction] = []
    outside: list[str] = []
    draft: Draft | None = None
    for step in plan.steps:
        match step.kind:
            case "analyst":
                finding = await ask("analyst", step.id, step.goal, Finding)
                receipt, finding = executor.merged(receipt, finding)
                findings.append(finding)
            case "chaser":
                proposed = await ask("chaser", step.id, step.goal, _Proposed)
                kept, off, _ = executor.checked_chaser(proposed.actions, config, managed=r.managed)
                child(OUTSIDE, config.chonk_id).inc(len(off))
                outside += off
                actions += kept
            case "writer":

                def write(errors: Sequence[str], step: Any = step) -> Any:
                    return ask("writer", step.id, step.goal, Draft, errors)

                draft = await _grounded(
                    write, receipt, names=r.names - {r.recipient}, chonk=config.chonk_id
                )
                if above := _above(draft, r.tone, charter):  # RC-MGR-03: again, then plain
                    child(TONE, config.chonk_id).inc()
                    draft = await write([above])
                    again = grounding.faults(draft, receipt, names=r.names - {r.recipient})
                    if _above(draft, r.tone, charter) or again:
                        draft = receipts.template(findings, step_id=step.id, surface=r.surface)
    if draft is None:
        raise ModelOutputInvalid("the plan has no writer step")
    # A run whose channel is a packet writes a HUMAN_ONLY packet for its recipient to decide.
    kind = "PACKET" if r.channel == "packet" else f"SEND_MESSAGE:{r.channel}"
    message = ProposedAction(kind=kind, to=r.recipient, text=draft.body, receipt_id=receipt.id)
    out = [msgspec.structs.replace(a, receipt_id=a.receipt_id or receipt.id) for a in actions]
    out += _surfaced(r, receipt.id, config)
    leaving = tuple(a for a in (message, *out) if executor.leaves(a, [receipt]))
    return Outcome(plan, tuple(findings), receipt, draft, leaving, tuple(shown), tuple(outside))


def _above(draft: Draft, ceiling: float, charter: RoleCharter) -> str | None:
    """Why `draft` is above the run's tone, by what its writer says it used or by what its
    body shows; None when it is not."""
    if draft.tone_used > ceiling:
        return f"toneUsed {draft.tone_used} is above {ceiling}"
    shown, shows = tone.read(draft.body, charter.voice)
    if shown > ceiling:
        return f"the body shows {' and '.join(shows)}, a tone of {shown} at least, above {ceiling}"
    return None


def _surfaced(r: Run, receipt: str, config: RunConfig) -> list[ProposedAction]:
    """What the run's policy adds to the message, within the allowlist: its renderings
    other than text, and an escalation to the recipient for each open decision others made
    (§2: every packet reaches the owner through Chonksworth, who surfaces what it did not
    create; §9's three)."""
    added = [
        ProposedAction(kind="RENDER_CONTENT", to=r.recipient, text=f, receipt_id=receipt)
        for f in r.formats
        if f != "text"
    ] + [
        ProposedAction(kind="ESCALATE", to=r.recipient, text=d, receipt_id=receipt)
        for d in r.decisions
    ]
    return [a for a in added if a.kind in config.actions]


class _Proposed(msgspec.Struct, frozen=True, rename="camel"):
    actions: tuple[ProposedAction, ...]


async def _grounded(
    write: Callable[[Sequence[str]], Any], receipt: Receipt, *, names: frozenset[str], chonk: str
) -> Draft:
    """§3.4: one regeneration with the errors; a second failure fails the step."""
    draft = await write(())
    child(DRAFTS, chonk).inc()
    errors = grounding.faults(draft, receipt, names=names)
    if not errors:
        return draft
    child(REJECTED, chonk).inc()
    draft = await write(errors)
    if again := grounding.faults(draft, receipt, names=names):
        raise ModelOutputInvalid("the draft failed the grounding check twice: " + "; ".join(again))
    return draft
