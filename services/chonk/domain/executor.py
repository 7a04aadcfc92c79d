"""The executor's checks at every handoff between sub-agents (§3.5): no sub-agent calls
another, so each boundary is one of these pure functions over typed data."""

from collections.abc import Sequence

import msgspec

from services.chonk.domain.run import RunConfig
from services.chonk.domain.types import Finding, ProposedAction, Receipt, StepPlan

__all__ = [
    "CHASER_KINDS",
    "HandoffRefused",
    "checked_chaser",
    "checked_plan",
    "leaves",
    "merged",
]

# §3.3: what a chaser may propose, plus a work comment where the matrix allows it.
CHASER_KINDS = frozenset({"SCHEDULE_FOLLOWUP", "ESCALATE", "HANDOFF"})
_COMMENT = "CONNECTOR_WRITE:work.comment"


class HandoffRefused(ValueError):
    """A sub-agent's output the executor does not take, with every reason."""

    def __init__(self, boundary: str, reasons: Sequence[str]) -> None:
        super().__init__(f"{boundary}: {'; '.join(reasons)}")
        self.boundary, self.reasons = boundary, tuple(reasons)


def checked_plan(plan: StepPlan, config: RunConfig, *, budget_steps: int) -> StepPlan:
    """§3.1: each step's tools within the allowlist, expected actions within the action
    allowlist, a chaser only where the charter has one, within budget."""
    reasons = [
        f"step {s.id}: tool {t} is not allowed" for s in plan.steps for t in s.tools
        if t not in config.tools
    ]  # fmt: skip
    reasons += [
        f"action {a} is not allowed" for a in plan.expected_actions if a not in config.actions
    ]
    reasons += [
        f"step {s.id}: this Chonk has no chaser" for s in plan.steps
        if s.kind == "chaser" and not config.chaser
    ]  # fmt: skip
    if len(plan.steps) > budget_steps:
        reasons.append(f"{len(plan.steps)} steps; the budget allows {budget_steps}")
    ids = {s.id for s in plan.steps}
    reasons += [
        f"step {s.id}: reads {i}, which no step before it makes" for s in plan.steps
        for i in s.inputs if i not in ids
    ]  # fmt: skip
    if reasons:
        raise HandoffRefused("planner", reasons)
    return plan


def merged(receipt: Receipt, finding: Finding) -> tuple[Receipt, Finding]:
    """§3.2: a finding whose every item cites its sources by number, merged into the run's
    receipt: its sources renumbered after those already there, and its items with them."""
    own = {s.n for s in finding.sources}
    reasons = [f"item {i}: cites no source" for i, it in enumerate(finding.items) if not it.sources]
    reasons += [
        f"item {i}: cites [{n}], which the finding does not list"
        for i, it in enumerate(finding.items)
        for n in it.sources
        if n not in own
    ]
    if reasons:
        raise HandoffRefused(f"analyst {finding.step_id}", reasons)
    base = len(receipt.sources)
    number = {s.n: base + i + 1 for i, s in enumerate(finding.sources)}
    sources = tuple(msgspec.structs.replace(s, n=number[s.n]) for s in finding.sources)
    items = tuple(
        msgspec.structs.replace(it, sources=tuple(number[n] for n in it.sources))
        for it in finding.items
    )
    receipt = msgspec.structs.replace(
        receipt,
        sources=(*receipt.sources, *sources),
        rule_evaluations=(*receipt.rule_evaluations, *finding.rule_evaluations),
        confidence=min(receipt.confidence, finding.confidence),
        gaps=(*receipt.gaps, *finding.gaps),
    )
    return receipt, msgspec.structs.replace(finding, items=items, sources=sources)


def checked_chaser(
    actions: Sequence[ProposedAction], config: RunConfig, *, managed: frozenset[str]
) -> tuple[list[ProposedAction], list[str], list[str]]:
    """§3.3: only its four kinds (and a work comment where the matrix allows it), each
    within the run's actions; never a message to a person this Chonk does not manage (that
    is a HANDOFF). (kept, the kinds dropped as outside the allowlist, why each other was
    dropped): §11's RC-MGR-01 drops an action outside the allowlist and lets the run go
    on, and counts it."""
    allowed = {a for a in config.actions if a.startswith("SEND_MESSAGE:")} | CHASER_KINDS
    if _COMMENT in config.actions:
        allowed.add(_COMMENT)
    kept, outside, dropped = [], [], []
    for i, action in enumerate(actions):
        if action.kind not in allowed or action.kind not in config.actions:
            outside.append(action.kind)
            dropped.append(f"action {i}: a chaser does not propose {action.kind}")
        elif action.kind.startswith("SEND_MESSAGE:") and action.to not in managed:
            dropped.append(f"action {i}: {action.to} is not managed here; that is a HANDOFF")
        else:
            kept.append(action)
    return kept, outside, dropped


def leaves(action: ProposedAction, receipts: Sequence[Receipt]) -> bool:
    """§5.3: a recommendation or decision leaves the executor only with a receipt that
    holds at least one source."""
    found = next((r for r in receipts if r.id == action.receipt_id), None)
    return found is not None and len(found.sources) >= 1
