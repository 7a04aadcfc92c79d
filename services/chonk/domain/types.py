"""The typed contracts of manager-agents.md: charters and voices (§2, §7.1), and what the
sub-agents hand the executor (§3): StepPlan, Finding, Draft, ProposedAction, and the Receipt
their sources are numbered in (§5.3). JSON keys are the spec's camelCase."""

from datetime import datetime
from typing import Any, Literal

import msgspec

__all__ = [
    "Draft",
    "Escalation",
    "Finding",
    "FindingItem",
    "Handoff",
    "ProposedAction",
    "Receipt",
    "RoleCharter",
    "RuleEvaluation",
    "SourceRef",
    "Step",
    "StepPlan",
    "VoiceProfile",
]


class Spec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """A value of the spec, refused whole if it holds a field the spec does not name."""


class VoiceProfile(Spec, kw_only=True):
    chonk_id: str
    display_name: str
    species: str
    register: str
    signature_phrases: tuple[str, ...] = ()
    humor_style: Literal["dry", "warm", "deadpan", "exuberant", "none"]
    warmth: float
    directness: float
    formality: float
    verbosity: Literal["terse", "normal", "expansive"]
    emoji: Literal["never", "rare", "sometimes"]
    forbidden_moves: tuple[str, ...] = ()


class Escalation(Spec, kw_only=True):
    when: str
    to: str
    as_: Literal["escalation", "handoff", "packet"] = msgspec.field(name="as")


class Handoff(Spec, kw_only=True):
    to_chonk: str
    when: str


class RoleCharter(Spec, kw_only=True):
    """A charter as shipped; its tool and action allowlists are its column of §4's matrix."""

    chonk_id: str
    title: str
    species: str
    functions: tuple[str, ...]
    owns: tuple[str, ...]
    escalates: tuple[Escalation, ...]
    never_touches: tuple[str, ...]
    sub_agents: dict[str, bool]
    handoffs_to: tuple[Handoff, ...]
    voice: VoiceProfile
    tool_allowlist: frozenset[str] = frozenset()
    action_allowlist: frozenset[str] = frozenset()


class Step(Spec, kw_only=True):
    id: str
    kind: Literal["analyst", "chaser", "writer"]
    goal: str
    tools: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    output_schema: str = ""


class StepPlan(Spec, kw_only=True):
    objective: str
    steps: tuple[Step, ...]
    expected_actions: tuple[str, ...] = ()
    stop_conditions: tuple[str, ...] = ()


class SourceRef(Spec, kw_only=True):
    n: int
    kind: Literal["org", "mirror", "memory", "service", "policy", "message", "decision"]
    ref: str
    label: str
    as_of: datetime
    url: str | None = None


class RuleEvaluation(Spec, kw_only=True):
    rule_id: str
    input: dict[str, Any] = {}
    result: Literal["pass", "fail", "threshold_exceeded", "n/a", "fired"]
    detail: str = ""


class FindingItem(Spec, kw_only=True):
    text: str
    sources: tuple[int, ...]
    severity: Literal["info", "watch", "risk", "critical"] | None = None
    refs: tuple[str, ...] = ()


class Finding(Spec, kw_only=True):
    """An analyst's answer to one step; its `sources` are numbered from 1 within it, and
    every item cites them by number."""

    step_id: str
    kind: str
    items: tuple[FindingItem, ...]
    sources: tuple[SourceRef, ...]
    rule_evaluations: tuple[RuleEvaluation, ...] = ()
    confidence: float = 1.0
    gaps: tuple[str, ...] = ()


class Draft(Spec, kw_only=True):
    step_id: str
    surface: Literal["chat", "app", "sms", "console", "email"]
    body: str
    citations: tuple[int, ...] = ()
    tone_used: float = 0.0


class ProposedAction(Spec, kw_only=True):
    """What a sub-agent proposes; the executor classifies it and it needs a receipt."""

    kind: str
    to: str
    text: str = ""
    receipt_id: str | None = None
    reason: str | None = None  # a HANDOFF's, from §8's reasons


class Receipt(Spec, kw_only=True):
    id: str
    run_id: str
    tenant_id: str
    created_at: datetime
    sources: tuple[SourceRef, ...] = ()
    rule_evaluations: tuple[RuleEvaluation, ...] = ()
    rationale: str = ""
    confidence: float = 1.0
    gaps: tuple[str, ...] = ()
    visibility: Literal["self", "self_mor", "self_owner", "owner"] = "self"
