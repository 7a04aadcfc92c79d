"""Grants as tether stores them: who may issue, delegate and revoke (issue 4, the service)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

from libs.contracts import codec
from libs.contracts.agents import ORG_AGENT, PERSONAL_AGENT
from libs.contracts.poa import GrantId, GrantRecord
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from services.poa.domain.contain import contain
from services.poa.domain.reading import SUPPORTED_VERSION, items, obj, text

__all__ = [
    "DOCUMENT_MOST",
    "all_held",
    "child",
    "descendants",
    "held",
    "revoked",
    "root",
    "standing_delegate",
]

# A grant is kept for good and an act's envelope with the ask it raises: 64 KiB of JSON,
# some thirteen times the largest of the official vectors.
DOCUMENT_MOST = 64 * 1024


def root(
    grant: dict[str, Any], principal: Principal, now: datetime, *, ask_expires_s: int
) -> GrantRecord:
    """A person issues a root grant, in their own name only; an agent issues none."""
    if principal.is_agent:
        raise Refused("agent-cannot-issue", 403, "an agent cannot grant itself power")
    _readable(grant)
    if text(obj(grant.get("principal")).get("sub")) != principal.sub:
        raise Refused(
            "grant-not-yours", 403, f"principal.sub must be you ({principal.sub}); grants are "
            "issued only in the issuer's own name"
        )  # fmt: skip
    if items(obj(grant.get("delegation")).get("chain")):
        raise Refused("not-a-root", 422, "a grant with a delegation chain is made by delegating")
    return _record(grant, principal, parent_id=None, now=now, ask_expires_s=ask_expires_s)


def child(
    parent: GrantRecord,
    grant: dict[str, Any],
    principal: Principal,
    now: datetime,
    *,
    ask_expires_s: int,
) -> GrantRecord:
    """Only the parent's delegate delegates, and only a child contained in the parent."""
    if principal.act is None or principal.act != parent.delegate:
        raise Refused("not-the-delegate", 403, f"only {parent.delegate} may delegate {parent.id}")
    if parent.revoked:
        raise Refused("grant-revoked", 409, f"{parent.id} is revoked")
    _readable(grant)
    contained = contain(parent.grant, grant)
    if not contained.ok:
        raise Refused(
            "not-contained", 422, f"the child carries more than {parent.id}",
            errors=contained.violations,
        )  # fmt: skip
    return _record(grant, principal, parent_id=parent.id, now=now, ask_expires_s=ask_expires_s)


def names_removed(record: GrantRecord, agent: str, made_again_at: datetime | None) -> bool:
    """Whether the grant names `agent`, an org's agent or bot removed, as its delegate: one
    issued after an agent was made again under the id (`made_again_at`) names that one."""
    return record.delegate == agent and (made_again_at is None or record.issued_at < made_again_at)


def standing_delegate(record: GrantRecord) -> str | None:
    """The org's own agent or bot the grant names as its delegate, whose standing is asked
    before it is stored; None for another delegate (one outside tether, or the person's own
    agent), which has no standing tether keeps. A delegate that could never act on it is
    refused: another person's own agent acts for them alone, and another org's agent in
    that org alone."""
    if (own := PERSONAL_AGENT.match(record.delegate)) and own[1] != record.owner:
        raise Refused(
            "delegate-of-another-person",
            422,
            f"delegate.sub {record.delegate} is {own[1]}'s own agent, which acts for them "
            f"alone: it could act on no grant of {record.owner}'s",
        )
    found = ORG_AGENT.match(record.delegate)
    if found is None:
        return None
    if found[1] != record.org:
        raise Refused(
            "delegate-of-another-org",
            422,
            f"delegate.sub {record.delegate} is an agent of {found[1]}'s, which acts in "
            f"{found[1]} alone: it could act on no grant of {record.org}'s",
        )
    return record.delegate


def same_grant(made: GrantRecord, asked: GrantRecord) -> bool:
    """Whether `made` is the grant `asked` is, whenever it was issued and whatever became of
    it since."""
    return msgspec.structs.replace(made, issued_at=asked.issued_at, revoked=asked.revoked) == asked


def descendants(of: str, grants: list[GrantRecord]) -> list[GrantRecord]:
    """Every grant below `of`, through any number of delegations."""
    found, frontier = [], {of}
    while frontier:
        below = [g for g in grants if g.parent_id in frontier]
        found += below
        frontier = {g.id for g in below}
    return found


def held(record: GrantRecord, lineage: Sequence[GrantRecord]) -> GrantRecord:
    """The grant as it holds: revoked where it or an ancestor is, as verification reads
    it. A child delegated while its parent was being revoked is stored unrevoked (the
    revocation listed the descendants before it was stored), and holds nothing."""
    if record.revoked or not (gone := [a for a in lineage if a.revoked]):
        return record
    return revoked(record, min(a.revoked_at or record.issued_at for a in gone))


def all_held(records: Sequence[GrantRecord]) -> list[GrantRecord]:
    """`held` for each of one person's grants, their lineage read from among them."""
    by_id = {r.id: r for r in records}

    def lineage(record: GrantRecord) -> list[GrantRecord]:
        found = []
        while (parent := by_id.get(record.parent_id or "")) is not None:
            found.append(parent)
            record = parent
        return found

    return [held(r, lineage(r)) for r in records]


def revoked(record: GrantRecord, now: datetime) -> GrantRecord:
    if record.revoked:
        return record
    return msgspec.structs.replace(record, revoked=True, revoked_at=now)


def _readable(grant: dict[str, Any]) -> None:
    codec.bounded("grant", grant, DOCUMENT_MOST)
    if grant.get("poa_version") != SUPPORTED_VERSION:
        raise Refused("unsupported-version", 422, f"poa_version must be {SUPPORTED_VERSION!r}")
    try:
        msgspec.convert(grant.get("grant_id"), GrantId)
    except msgspec.ValidationError as exc:
        raise Refused("invalid-grant-id", 422, f"grant_id: {exc}") from exc


def _record(
    grant: dict[str, Any],
    principal: Principal,
    *,
    parent_id: str | None,
    now: datetime,
    ask_expires_s: int,
) -> GrantRecord:
    return GrantRecord(
        id=grant["grant_id"],
        org=principal.org,
        owner=principal.sub,
        delegate=text(obj(grant.get("delegate")).get("sub")),
        parent_id=parent_id,
        revoked=False,
        issued_at=now,
        grant=grant,
        ask_expires_s=ask_expires_s,
    )
