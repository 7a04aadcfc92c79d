"""`tether.poa.*`: Power-of-Action grants, verification, containment and the spend ledger.

Grants, envelopes and states are the JSON shapes of spec/poa-verifier.md §2, carried as
free JSON values: the verifier reads them totally and judges what it finds. Non-integer
numbers in them are read as exact decimals.
"""

from typing import Annotated, Any, Literal

import msgspec

from libs.contracts.base import Contract, Instant, OrgId
from libs.contracts.registry import Event, Subject, request_subject, service_contract

__all__ = [
    "ASK_ANSWERED",
    "CONTRACT",
    "ActOutcome",
    "ActRequest",
    "AskAnswer",
    "AskList",
    "AskRecord",
    "AskRef",
    "ContainRequest",
    "Containment",
    "Decision",
    "DelegateGrant",
    "GrantId",
    "GrantList",
    "GrantRecord",
    "GrantRef",
    "IssueGrant",
    "ListAsks",
    "ListGrants",
    "VerifyRequest",
]

GrantId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$(?!\n)")]
AskId = Annotated[str, msgspec.Meta(pattern=r"^ask_[0-9a-f]{24}$(?!\n)")]
# How long an ask waits for its person before it is denied: a minute to thirty days.
AskExpiry = Annotated[int, msgspec.Meta(ge=60, le=30 * 24 * 3600)]
DEFAULT_ASK_EXPIRY_S = 24 * 3600


class Decision(Contract, omit_defaults=True):
    """ALLOW, ASK_USER or DENY and the rule that decided (poa-verifier §1.1).

    `act_id` once the act is resolved; `violations` and `parent_id` with `not_contained`.
    """

    decision: str
    rule_id: str
    act_id: str | None = None
    violations: tuple[str, ...] = ()
    parent_id: str | None = None


class Containment(Contract):
    """Whether a child grant carries no more than its parent, and every way it does (§4)."""

    ok: bool
    violations: tuple[str, ...] = ()


class VerifyRequest(Contract):
    """One official verification case's inputs, judged as given: nothing is stored."""

    grant: Any = None
    parents: Any = []
    envelope: Any = None
    state: Any = None


class ContainRequest(Contract):
    parent: Any = None
    child: Any = None


class IssueGrant(Contract):
    """A root grant; its `principal.sub` must be the person issuing it. An act on it that
    asks its person is denied if unanswered after `ask_expires_s`."""

    grant: dict[str, Any]
    ask_expires_s: AskExpiry = DEFAULT_ASK_EXPIRY_S


class DelegateGrant(Contract):
    """A child of grant `id`, made by that grant's delegate; refused unless contained."""

    id: GrantId
    child: dict[str, Any]
    ask_expires_s: AskExpiry = DEFAULT_ASK_EXPIRY_S


class GrantRef(Contract):
    id: GrantId


class ListGrants(Contract):
    """The caller's own grants, in the order they were issued: `limit` after the grant
    `after`, fewer where a page would pass 512 KiB."""

    after: GrantId | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50


class GrantRecord(Contract):
    """A stored grant, bound to the person (`owner`) in whose name it was issued."""

    id: GrantId
    org: OrgId
    owner: str
    delegate: str | None
    parent_id: str | None
    revoked: bool
    issued_at: Instant
    revoked_at: Instant | None = None
    grant: dict[str, Any] = {}
    ask_expires_s: int = DEFAULT_ASK_EXPIRY_S


class GrantList(Contract):
    """A page of grants; `next` is the cursor of the page after it, null on the last."""

    grants: list[GrantRecord]
    next: GrantId | None = None


class ActRequest(Contract):
    """Verify the envelope against stored grant `id` and the live ledger; record it if allowed."""

    id: GrantId
    envelope: dict[str, Any]


class ActOutcome(Contract, omit_defaults=True):
    """The decision; `recorded` when the act was reserved in the ledger.

    `spent_month_usd` (a decimal string) and `binding_acts_today` are the ledger after it.
    Days and months are UTC. An ASK_USER names the `ask` put to the person (answered 202):
    its outcome is at `GET /v1/poa/asks/{ask}` and on `tether.evt.poa.ask.answered`.
    """

    decision: Decision
    recorded: bool
    spent_month_usd: str
    binding_acts_today: int
    ask: str | None = None


class AskRecord(Contract, kw_only=True):
    """An act that decided ASK_USER, put to its person in their own room (`room`, question
    `question_seq`): what the agent wants to do and which rule asked. `open` until the person
    answers or it expires; then `allowed` (charged to the ledger when approved, `decision`
    ALLOW `principal_approved`) or `denied` (`principal_declined`, `ask_expired`, or the
    rule that denies the act on the ledger as it was when approved)."""

    id: AskId
    org: OrgId
    person: str
    agent: str
    grant_id: GrantId
    act_id: str | None
    rule_id: str
    act: str
    amount: str | None = None
    currency: str | None = None
    counterparty: str | None = None
    purpose: str | None = None
    envelope: dict[str, Any]
    official: bool
    state: Literal["open", "allowed", "denied"] = "open"
    asked_at: Instant
    expires_at: Instant
    answered_at: Instant | None = None
    decision: Decision | None = None
    room: str | None = None
    question_seq: int | None = None


class AskRef(Contract):
    id: AskId


class ListAsks(Contract):
    """The caller's asks still waiting on them."""


class AskList(Contract):
    """The oldest first, as many as one answer carries; `more`: others wait behind them, to
    be seen as these are answered."""

    asks: list[AskRecord]
    more: bool = False


class AskAnswer(Contract):
    """The person's answer to ask `id`: only they may give it, once."""

    id: AskId
    answer: Literal["approve", "decline"]


def _subject(verb: str, request: type, reply: type, summary: str, **fields: object) -> Subject:
    return request_subject("poa", verb, request, reply, summary, **fields)


VERIFY = _subject("verify", VerifyRequest, Decision, "verify an act against grants as given")
CONTAIN = _subject("contain", ContainRequest, Containment, "is a child grant within its parent")
ISSUE = _subject("issue", IssueGrant, GrantRecord, "issue a root grant in my name")
LIST = _subject("list", ListGrants, GrantList, "my grants")
GET = _subject("get", GrantRef, GrantRecord, "one of my grants")
REVOKE = _subject("revoke", GrantRef, GrantRecord, "revoke one of my grants and its descendants")
DELEGATE = _subject("delegate", DelegateGrant, GrantRecord, "delegate a contained child grant")
ACT = _subject(
    "act",
    ActRequest,
    ActOutcome,
    "verify an act on a stored grant; record it",
    keyed_itself=True,  # charged once per key in the ledger's compare-and-set
)
ASKS = _subject("asks", ListAsks, AskList, "the asks waiting on me")
ASK = _subject("ask", AskRef, AskRecord, "one ask of mine, or of my person")
ANSWER = _subject("answer", AskAnswer, AskRecord, "approve or decline an ask of mine")

ASK_ANSWERED = Event(
    "tether.evt.poa.ask.answered",
    AskRecord,
    "an ask was approved, declined or expired: its `decision` is final",
)

CONTRACT = service_contract(
    "poa",
    [VERIFY, CONTAIN, ISSUE, LIST, GET, REVOKE, DELEGATE, ACT, ASKS, ASK, ANSWER],
    events=(ASK_ANSWERED,),
    buckets=("poa-grants", "poa-ledger", "poa-acts", "poa-asks"),
    shared_streams=("EVENTS", "TIMERS", "DEAD"),
    timer_targets=("ask_expiry",),
)
