"""Verification (poa-verifier §3): one decision and the rule id of the first check that fires.

Phases A (admission) and B (lineage) are here; C (resolution, DENY) and D (asks) are in
`resolve.py` and `asks.py`. Every check cites its number in the spec.
"""

import itertools
from typing import Any

from services.poa.domain import asks, resolve
from services.poa.domain.contain import contain
from services.poa.domain.decisions import DENY, MALFORMED, Decision, allow, deny
from services.poa.domain.reading import SUPPORTED_VERSION, count, instant, is_official, items, obj

__all__ = ["verify"]


def verify(grant: Any, parents: Any, envelope: Any, state: Any) -> Decision:
    """Never raises: input no rule can read is denied as `malformed_input`."""
    try:
        return _verify(obj(grant), items(parents), obj(envelope), obj(state))
    except Exception:  # a rule met a shape it cannot read: fail closed
        return deny(MALFORMED)


def _verify(
    grant: dict[str, Any], parents: list[Any], envelope: dict[str, Any], state: dict[str, Any]
) -> Decision:
    decision = _admission(grant, state) or _lineage(grant, parents, state)
    if decision is not None:
        return decision
    act = resolve.act(grant, envelope)
    if isinstance(act, Decision):
        return act
    decision = asks.first_ask(grant, act, envelope, state)
    if decision is not None:
        return decision
    if is_official(act.authority):  # V36, V37
        return allow("standing_within_limits", act.act_id)
    return allow("no_go_ahead_needed", act.act_id)


def _admission(grant: dict[str, Any], state: dict[str, Any]) -> Decision | None:
    # V1 before V2: an unverified grant's fields, its version included, are not read.
    if _carrier(state) and grant.get("grant_id") not in items(state["authenticated_grant_ids"]):
        return deny("not_authenticated")
    if grant.get("poa_version") != SUPPORTED_VERSION:  # V2
        return deny("unsupported_version")
    if "grounding_plan" in grant and grant["grounding_plan"] is not None:  # V3
        if not _sealed(grant["grounding_plan"]):
            return deny("grounding_ref_outside_seal")
    revoked = state.get("revoked")
    if revoked is not None and revoked is not False:  # V4
        return deny("revoked")
    validity, now = obj(grant.get("validity")), instant(state.get("now"))
    if validity.get("not_before") is not None:  # V5: not_before is inclusive
        not_before = instant(validity["not_before"])
        if not_before is None or now is None or now < not_before:
            return deny("not_yet_valid")
    if validity.get("expires") is not None:  # V6: expires is exclusive
        expires = instant(validity["expires"])
        if expires is None or now is None or now >= expires:
            return deny("expired")
    return None


def _lineage(grant: dict[str, Any], parents: list[Any], state: dict[str, Any]) -> Decision | None:
    chain = items(obj(grant.get("delegation")).get("chain"))
    if not chain:
        return None
    ancestors: list[dict[str, Any]] = []
    for link in map(obj, chain):
        grant_id = link.get("grant_id")
        parent = next(
            (
                p
                for p in map(obj, parents)
                if isinstance(grant_id, str) and p.get("grant_id") == grant_id
            ),
            None,
        )
        if parent is None:  # V7
            return deny("parent_missing")
        if _carrier(state) and grant_id not in items(state["authenticated_grant_ids"]):  # V8
            return deny("parent_not_authenticated")
        if parent.get("poa_version") != SUPPORTED_VERSION:  # V9
            return deny("unsupported_version")
        ancestors.append(parent)
    for ancestor in ancestors:  # V10: max_depth bounds hops below the root; absent is 0
        max_depth = count(obj(ancestor.get("delegation")).get("max_depth")) or 0
        if len(chain) > max_depth:
            return deny("delegation_too_deep")
    lineage = [*ancestors, grant]
    for parent, child in itertools.pairwise(lineage):  # V11
        contained = contain(parent, child)
        if not contained.ok:
            parent_id = parent.get("grant_id")
            return Decision(
                decision=DENY,
                rule_id="not_contained",
                violations=contained.violations,
                parent_id=parent_id if isinstance(parent_id, str) else None,
            )
    return None


def _carrier(state: dict[str, Any]) -> bool:
    """§1.2: carrier mode is on when the list is present, even empty."""
    return state.get("authenticated_grant_ids") is not None


def _sealed(plan: Any) -> bool:
    """V3: every ref any actor relies on is declared in the plan's own sources."""
    relies_on = plan.get("relies_on") if isinstance(plan, dict) else None
    if not isinstance(relies_on, dict):
        return False
    declared = [obj(s).get("ref") for s in items(plan.get("sources"))]
    declared = [ref for ref in declared if isinstance(ref, str)]
    for refs in relies_on.values():
        if not isinstance(refs, list) or any(ref not in declared for ref in refs):
            return False
    return True
