"""`tether.chonk.*`: the manager agents (manager-agents.md).

A run is one Chonk's planner, analysts, chaser and writer over the run's context, each
handoff checked by the executor; it ends with a receipt and ProposedActions. Memory about a
person is theirs to read on their knows page, with every read of it, and theirs to redact
or answer.
"""

from typing import Annotated, Any, Literal

import msgspec

from libs.contracts.base import PRINTABLE, TEXT_CHARACTER, Contract, Instant
from libs.contracts.registry import Event, Subject, request_subject, service_contract

__all__ = [
    "ACTION_READY",
    "CADENCE",
    "CADENCES",
    "CHONKS",
    "CHONK_BOT",
    "CONTRACT",
    "DECIDED",
    "HANDOFF_ACCEPTED",
    "HANDOFF_DECLINED",
    "HANDOFF_REQUESTED",
    "MESSAGE",
    "PACKETS",
    "RUNS",
    "SET_VOICE",
    "STOP_CADENCE",
    "TRIAGE_OPENED",
    "VOICE",
    "ActionReady",
    "CadenceList",
    "CadenceStarted",
    "CadenceStopped",
    "ChonkList",
    "ChonkSkin",
    "ChonkTitle",
    "GetKnows",
    "GetVoice",
    "HandoffDecided",
    "HandoffRequest",
    "Heard",
    "KnownFact",
    "Knows",
    "ListCadences",
    "ListChonks",
    "ListPackets",
    "ListRuns",
    "MemoryAnswer",
    "MemoryRead",
    "Packet",
    "PacketDecided",
    "PacketList",
    "RunList",
    "RunRef",
    "RunReport",
    "RunSummary",
    "SetVoice",
    "StartCadence",
    "StartRun",
    "StopCadence",
    "ToChonk",
    "TonePolicy",
    "Triage",
    "Trigger",
    "Voice",
    "is_chonk_bot",
]

Name = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$(?!\n)")]


class StartRun(Contract):
    """Run `run` of a simulation tenant's data (its org model, mirrors and memory are
    fixtures; the scripted model supplies the sub-agents' prose)."""

    tenant: Name
    run: Name


# What started a run: an admin asking, its cadence coming round, another Chonk's handoff.
Trigger = Literal["objective", "cadence", "handoff"]
RunId = Annotated[str, msgspec.Meta(pattern=r"^run_[A-Za-z0-9_]{1,64}$(?!\n)")]


class RunRef(Contract):
    id: RunId


class RunReport(Contract):
    """A run's receipt (§5.3), its message as delivered in chat, and what it proposed, each
    with its class; `body` the message without its Receipts block, its [n] markers naming
    the receipt's sources, as the owner console draws it beside them; `delivered` the
    messages carried out: where each is (`room`, `seq`); `regressed` when this run made its
    Chonk's third action outside its allowlist in a week, so its functions are at PROPOSE
    from now on (RC-MGR-01)."""

    id: str
    chonk: str
    receipt: dict[str, Any]
    message: str
    actions: list[dict[str, Any]]
    prompts: list[str]
    memory: list[str]
    delivered: list[dict[str, Any]] = []
    regressed: bool = False  # this run's actions outside the allowlist regressed its Chonk
    trigger: Trigger = "objective"
    correlation: str = ""  # the story this run is part of: a handoff's, or its own id
    body: str = ""  # none in a report stored by the release before
    disputed: int = 0  # how often a reader said its message was not so (RC-MGR-02)
    # The voice the run spoke in (none in a report stored by a release before): the name
    # its Chonk was called by, the context its message was written in, and the tone that
    # context and its surface resolved to (§7.2), which its message never went above.
    name: str = ""
    context: str = ""
    tone: float | None = None


class ListRuns(Contract):
    """My org's runs, newest first: `limit` after the run `after`. A cadence's run is
    stored every time it comes round, so the list is paged."""

    after: RunId | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50


class RunSummary(Contract):
    """A run as its list names it: its Chonk also by `title`, `at` when it ran (its
    receipt's `createdAt`)."""

    id: str
    chonk: str
    title: str
    trigger: Trigger
    at: Instant
    correlation: str
    disputed: int = 0  # how often a reader said its message was not so (RC-MGR-02)


class RunList(Contract):
    """A page of runs; `next` is the cursor of the page after it, null on the last."""

    runs: list[RunSummary]
    next: RunId | None = None


class StartCadence(Contract):
    """Start cadence `cadence` of a simulation tenant: each time it comes round (in the
    tenant's time zone), its run runs, and the next time is timed on the scheduler."""

    tenant: Name
    cadence: Name


class CadenceStarted(Contract):
    """A cadence that runs, since `since`: its run comes round next at `next_at`."""

    cadence: str
    run: str
    since: Instant
    next_at: Instant
    timer: str


class ListCadences(Contract):
    """The cadences of the caller's org that run."""


class CadenceList(Contract):
    cadences: list[CadenceStarted]


class StopCadence(Contract):
    """Stop cadence `cadence` of the caller's org: its run comes round no more."""

    cadence: Name


class CadenceStopped(Contract):
    """`was_running`: false when it had not been started, or was stopped already."""

    cadence: str
    was_running: bool


class ListChonks(Contract):
    """The Chonks of my org, to write to: none where the org runs none."""


class ChonkTitle(Contract):
    """A Chonk by its charter's title, and by the name its org calls it (§7.1)."""

    id: str
    title: str
    name: str = ""  # none from a replica of the release before


class ChonkList(Contract):
    chonks: list[ChonkTitle]


class ToChonk(Contract):
    """A person's message to one of their org's Chonks (an IC_MESSAGE)."""

    chonk: Name
    text: Annotated[
        str, msgspec.Meta(min_length=1, max_length=2000, pattern=rf"^{TEXT_CHARACTER}+$(?!\n)")
    ]


class Heard(Contract):
    """What the Chonk read the message as, and what it did: `delivered` as a run's report
    says it (where each message is, what waits for whom)."""

    intent: Literal[
        "call_out",
        "disputed",
        "remember",
        "why",
        "human_decision",
        "ranking",
        "anonymous_feedback",
        "none",
    ]
    shift: str | None = None
    delivered: list[dict[str, Any]] = []


PacketId = Annotated[str, msgspec.Meta(pattern=r"^pkt_[A-Za-z0-9_]{1,120}$(?!\n)")]


class ListPackets(Contract):
    """The packets I decide, oldest first: `limit` after the packet `after`, fewer where a
    page would pass 512 KiB; `state` the open ones or the decided ones alone (both
    unless given). A cadence's run opens its packets every time it runs, and none leaves
    the list, so the list is paged."""

    after: PacketId | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50
    state: Literal["open", "decided"] | None = None


class PacketDecided(Contract):
    """I have decided packet `id`: what I decided happens outside (a packet is a decision
    record); it leaves what waits on me."""

    id: PacketId


class Packet(Contract):
    """A HUMAN_ONLY packet (§2, §6.3): a decision record for the one person who decides,
    with its own access control; never memory. Nothing happens until they decide."""

    id: str
    tenant: str
    chonk: str
    decider: str
    subject: str
    about: str
    text: str
    receipt: str
    correlation: str
    opened_at: Instant
    decided_at: Instant | None = None  # when its decider said they had decided


class PacketList(Contract):
    """A page of packets; `next` is the cursor of the page after it, null on the last."""

    packets: list[Packet]
    next: PacketId | None = None


class ActionReady(Contract):
    """An action a run carried out that a connector performs (§1): at once when it is
    AUTONOMOUS, after its decider's yes (`approved_by`) when PROPOSE_CONFIRM."""

    tenant: str
    chonk: str
    run: str
    correlation: str
    action: dict[str, Any]
    approved_by: str | None = None


class GetKnows(Contract):
    pass


class KnownFact(Contract, omit_defaults=True):
    id: str
    kind: str
    content: str
    visibility: str
    written_by: str
    used_for: list[str] = []
    expires_at: Instant | None = None
    response: str | None = None
    redacted: bool = False


class MemoryRead(Contract):
    at: Instant
    chonk: str
    run: str
    purpose: str
    facts: list[str]


class Knows(Contract):
    """What my manager knows: the facts about me, and who read them for what. `titles`:
    each Chonk they name (a fact's `written_by`, a read's `chonk`) by its title, as the
    page says it ("read by Chief Build Officer", §6.4)."""

    facts: list[KnownFact]
    reads: list[MemoryRead]
    titles: dict[str, str] = {}


class MemoryAnswer(Contract):
    """Redact a fact about me, or, where it may not be deleted, answer it in my words."""

    id: Annotated[str, msgspec.Meta(pattern=r"^mem_[A-Za-z0-9_]{1,80}$(?!\n)")]
    response: Annotated[str, msgspec.Meta(max_length=2000)] = ""


# §7.2's contexts, each with its ceiling (services/chonk/domain/tone.py), and the surfaces a
# message is drawn on.
ToneContext = Literal[
    "safety", "human_only_packet", "wellbeing", "feedback_concern", "rejection_notice",
    "escalation", "incident", "approval_request", "plan_change", "brief", "checkin", "reply",
    "review", "owner_update", "celebration", "all_hands", "launch",
]  # fmt: skip
Surface = Literal["chat", "app", "sms", "console", "email"]
Dial = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class TonePolicy(Contract):
    """The tenant's tone dial (§7.2): `default` kept within `min` and `max`, then under the
    context's ceiling; a surface's override stands for the dial there, and is under the
    ceiling too. `ceilings` are the contexts whose ceiling the owner lowered (RC-MGR-03's
    "a policy the owner can lower"): never above §7.2's."""

    default: Dial = 0.5
    min: Dial = 0.0
    max: Dial = 1.0
    surface_overrides: dict[Surface, Dial] = {}
    ceilings: dict[ToneContext, Dial] = {}


_ONE_LINE = rf"^{PRINTABLE}+$(?!\n)"
_Line = Annotated[str, msgspec.Meta(min_length=1, max_length=40, pattern=_ONE_LINE)]
_Phrase = Annotated[str, msgspec.Meta(min_length=1, max_length=120, pattern=_ONE_LINE)]


class ChonkSkin(Contract, omit_defaults=True):
    """How the org's Chonk is called and drawn (§1: a Chonk renamed or re-skinned keeps its
    charter and allowlist; only its name, species and signature phrases change). Set, each
    left out is the charter's; answered, each is as its runs use it."""

    name: _Line | None = None
    species: _Line | None = None
    signature_phrases: Annotated[tuple[_Phrase, ...], msgspec.Meta(max_length=8)] | None = None


class SetVoice(Contract):
    """My org's voice for its Chonks, whole: the tone dial, and how each Chonk it names is
    called and drawn; one it does not name is as its charter says."""

    tone: TonePolicy
    chonks: dict[Name, ChonkSkin] = {}


class GetVoice(Contract):
    """My org's voice for its Chonks."""


class Voice(Contract):
    """The org's voice as its runs use it: the tone dial (the tenant's own until an admin
    sets one), every context's ceiling `in_force` (§7.2's, 1.0 where it is the dial, or
    lower where the owner lowered it), every Chonk as it is called and drawn, and as its
    charter calls and draws it (`charters`: what a field left out of a set is)."""

    tone: TonePolicy
    in_force: dict[str, float]
    chonks: dict[str, ChonkSkin]
    charters: dict[str, ChonkSkin]


# A Chonk's bot is `bot:<org>:chonk-<chonk id>` in its tenant's rooms. No bot an org makes
# from a persona is named so (agents refuses it): one would be a member of every room a
# Chonk shares with a person, and read them.
CHONK_BOT = "chonk-"


def is_chonk_bot(org: str, member: str) -> bool:
    """Whether `member` is one of `org`'s Chonks' bots, which acts through the chonk service
    alone: never by a token, whatever an org made under its id before the name was kept."""
    return member.startswith(f"bot:{org}:{CHONK_BOT}")


def _subject(verb: str, request: type, reply: type, summary: str) -> Subject:
    return request_subject("chonk", verb, request, reply, summary)


START = _subject("start", StartRun, RunReport, "run a Chonk on a simulation tenant (admin)")
CADENCE = _subject("cadence", StartCadence, CadenceStarted, "start a tenant's cadence (admin)")
CADENCES = _subject("cadences", ListCadences, CadenceList, "my org's cadences that run (admin)")
STOP_CADENCE = _subject("stop_cadence", StopCadence, CadenceStopped, "stop a cadence (admin)")
PACKETS = _subject("packets", ListPackets, PacketList, "the HUMAN_ONLY packets I decide")
DECIDED = _subject("decided", PacketDecided, Packet, "say I have decided a packet")
MESSAGE = _subject("message", ToChonk, Heard, "write to one of my org's Chonks")
CHONKS = _subject("chonks", ListChonks, ChonkList, "my org's Chonks, to write to")
VOICE = _subject("voice", GetVoice, Voice, "my org's voice for its Chonks (admin)")
SET_VOICE = _subject("set_voice", SetVoice, Voice, "set my org's voice for its Chonks (admin)")
HandoffReason = Literal[
    "people_problem",
    "budget_impact",
    "scope_change",
    "security_or_safety",
    "owner_escalation",
    "cross_org_dependency",
    "recognition",
    "quiet_hr",
    "deal_desk",
    "other",
]


class HandoffRequest(Contract, rename="camel", kw_only=True):
    """§8: work one Chonk hands another, on the sending run's correlation id."""

    id: str
    tenant_id: str
    from_chonk: str
    to_chonk: str
    reason: HandoffReason
    subject_refs: tuple[str, ...] = ()
    requested_action: str
    urgency: Literal["now", "today", "this_week"] = "today"
    context_bundle_ref: str = ""
    receipt_id: str
    correlation_id: str
    created_by_run_id: str


class HandoffDecided(Contract):
    """The receiver's answer to a handoff: admitted, or declined with its reason (which
    goes back to the sender's next run)."""

    request: HandoffRequest
    accepted: bool
    reason: str


class Triage(Contract):
    """Two Chonks that disagreed twice: Chonksworth's triage takes the pair (§8)."""

    tenant: str
    pair: tuple[str, str]
    handoffs: list[str]


HANDOFF_REQUESTED = Event(
    "tether.evt.chonk.handoff.requested",
    HandoffRequest,
    "a run handed work to another Chonk; its receiver decides whether to take it",
    readers=frozenset({"chonk"}),
)
HANDOFF_ACCEPTED = Event(
    "tether.evt.chonk.handoff.accepted", HandoffDecided, "the receiver took a handoff"
)
HANDOFF_DECLINED = Event(
    "tether.evt.chonk.handoff.declined", HandoffDecided, "the receiver declined, with a reason"
)
TRIAGE_OPENED = Event(
    "tether.evt.chonk.triage.opened", Triage, "two Chonks disagreed twice: to Chonksworth"
)
ACTION_READY = Event(
    "tether.evt.chonk.action.ready",
    ActionReady,
    "an action carried out that a connector performs (none is built here)",
)

REPORT = _subject("report", RunRef, RunReport, "a run's receipt and actions (admin)")
RUNS = _subject("runs", ListRuns, RunList, "my org's runs, newest first (admin)")
KNOWS = _subject("knows", GetKnows, Knows, "what my manager knows about me")
ANSWER = _subject("answer", MemoryAnswer, KnownFact, "redact a fact about me, or answer it")

CONTRACT = service_contract(
    "chonk",
    [
        START,
        CADENCE,
        CADENCES,
        STOP_CADENCE,
        REPORT,
        RUNS,
        KNOWS,
        ANSWER,
        PACKETS,
        DECIDED,
        MESSAGE,
        CHONKS,
        VOICE,
        SET_VOICE,
    ],
    events=(HANDOFF_REQUESTED, HANDOFF_ACCEPTED, HANDOFF_DECLINED, TRIAGE_OPENED, ACTION_READY),
    buckets=("chonk-runs", "chonk-memory"),
    shared_streams=("EVENTS", "TIMERS", "DEAD"),
    # Each stage of the chaser's ladder (§3.3), each time a cadence comes round, and a
    # call-out's escalation, a timer on the one engine.
    timer_targets=("chase", "cadence", "cover", "proposal_lapse"),
)
