"""`tether.poa.*`: Power-of-Action grants, verification, containment and the spend ledger.

Grants, envelopes and states are the JSON shapes of spec/poa-verifier.md §2, carried as
free JSON values: the verifier reads them totally and judges what it finds. Non-integer
numbers in them are read as exact decimals.
"""

from datetime import datetime
from typing import Annotated, Any

import msgspec

from libs.contracts.base import Contract, OrgId
from libs.contracts.registry import Subject, request_subject, service_contract

__all__ = [
    "CONTRACT",
    "ActOutcome",
    "ActRequest",
    "ContainRequest",
    "Containment",
    "Decision",
    "DelegateGrant",
    "GrantId",
    "GrantList",
    "GrantRecord",
    "GrantRef",
    "IssueGrant",
    "ListGrants",
    "VerifyRequest",
]

GrantId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


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
    """A root grant; its `principal.sub` must be the person issuing it."""

    grant: dict[str, Any]


class DelegateGrant(Contract):
    """A child of grant `id`, made by that grant's delegate; refused unless contained."""

    id: GrantId
    child: dict[str, Any]


class GrantRef(Contract):
    id: GrantId


class ListGrants(Contract):
    """The caller's own grants."""


class GrantRecord(Contract):
    """A stored grant, bound to the person (`owner`) in whose name it was issued."""

    id: GrantId
    org: OrgId
    owner: str
    delegate: str | None
    parent_id: str | None
    revoked: bool
    issued_at: datetime
    revoked_at: datetime | None = None
    grant: dict[str, Any] = {}


class GrantList(Contract):
    grants: list[GrantRecord]


class ActRequest(Contract):
    """Verify the envelope against stored grant `id` and the live ledger; record it if allowed."""

    id: GrantId
    envelope: dict[str, Any]


class ActOutcome(Contract):
    """The decision; `recorded` when the act was reserved in the ledger.

    `spent_month_usd` (a decimal string) and `binding_acts_today` are the ledger after it.
    Days and months are UTC.
    """

    decision: Decision
    recorded: bool
    spent_month_usd: str
    binding_acts_today: int


def _subject(verb: str, request: type, reply: type, summary: str) -> Subject:
    return request_subject("poa", verb, request, reply, summary)


VERIFY = _subject("verify", VerifyRequest, Decision, "verify an act against grants as given")
CONTAIN = _subject("contain", ContainRequest, Containment, "is a child grant within its parent")
ISSUE = _subject("issue", IssueGrant, GrantRecord, "issue a root grant in my name")
LIST = _subject("list", ListGrants, GrantList, "my grants")
GET = _subject("get", GrantRef, GrantRecord, "one of my grants")
REVOKE = _subject("revoke", GrantRef, GrantRecord, "revoke one of my grants and its descendants")
DELEGATE = _subject("delegate", DelegateGrant, GrantRecord, "delegate a contained child grant")
ACT = _subject("act", ActRequest, ActOutcome, "verify an act on a stored grant; record it")

CONTRACT = service_contract(
    "poa",
    [VERIFY, CONTAIN, ISSUE, LIST, GET, REVOKE, DELEGATE, ACT],
    buckets=("poa-grants", "poa-ledger"),
)
