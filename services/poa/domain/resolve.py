"""Phase C (poa-verifier §3 C): which act, which authority, which actor; every check DENYs."""

from typing import Any

import msgspec

from services.poa.domain.decisions import Decision, deny
from services.poa.domain.reading import (
    PLAN,
    covers,
    grant_mode,
    identity,
    is_official,
    items,
    obj,
    session_mode,
    text,
)

__all__ = ["Act", "act"]


class Act(msgspec.Struct, frozen=True):
    """The resolved act: its authority, who is acting, and the effective mode (§3 C)."""

    authority: dict[str, Any]
    act_id: str | None
    actor: str
    mode: int
    official: bool
    ceiling: Any


def act(grant: dict[str, Any], envelope: dict[str, Any]) -> Act | Decision:
    invocation = obj(envelope.get("invocation"))
    arguments = obj(invocation.get("arguments"))
    requested_act, requested_effect = invocation.get("act_id"), invocation.get("effect")
    authorities = [obj(a) for a in items(grant.get("authorities"))]
    by_arguments = arguments.get("subscription") is True  # the only argument mapping in 1.3
    if by_arguments:
        effect = "subscribe"
    elif requested_effect is not None:
        effect = requested_effect
    else:
        held = _first(authorities, requested_act)
        effect = held.get("effect") if held is not None else None

    for denial in map(obj, items(grant.get("denied"))):  # V12: a denial beats any authority
        if (requested_act is not None and denial.get("act_id") == requested_act) or (
            effect is not None and denial.get("effect") == effect
        ):
            return deny(f"denied:{denial.get('act_id')}")

    if by_arguments or (requested_effect is not None and requested_act is None):
        matches = [a for a in authorities if a.get("effect") == effect]
        if len(matches) != 1:  # V14: not held, or held twice (ambiguous)
            return deny("effect_not_delegated")
        authority = matches[0]
    else:
        authority = _first(authorities, requested_act) if requested_act is not None else None
        if authority is None:  # V13
            return deny("act_not_delegated")
        if requested_effect is not None and authority.get("effect") != requested_effect:  # V14
            return deny("effect_not_delegated")
    act_id = text(authority.get("act_id"))
    return _actor(grant, envelope, authority, act_id, authorities)


def _actor(
    grant: dict[str, Any],
    envelope: dict[str, Any],
    authority: dict[str, Any],
    act_id: str | None,
    authorities: list[dict[str, Any]],
) -> Act | Decision:
    actor = identity(obj(envelope.get("invocation")).get("actor"))
    delegate = text(obj(grant.get("delegate")).get("sub"))
    listed = [identity(a) for a in items(authority.get("actors"))]
    holders = [h for h in listed if h] or [delegate]
    work_system = obj(grant.get("work_system"))
    named = [
        delegate,
        identity(work_system.get("lead")),
        *(text(obj(m).get("sub")) for m in items(work_system.get("members"))),
        *(identity(x) for a in authorities for x in items(a.get("actors"))),
    ]
    official = is_official(authority)
    if actor is None or (actor not in holders and actor in named):  # V15
        return deny("actor_not_authorized", act_id)
    if actor not in holders and not (  # V16
        work_system.get("unnamed_agents") == "read_draft" and not official and not listed
    ):
        return deny("unnamed_agent_not_allowed", act_id)
    for formation in map(obj, items(grant.get("formations"))):  # V17: every covering one
        if covers(formation, act_id) and not any(
            obj(p).get("membership") == "member" and identity(obj(p).get("actor")) == actor
            for p in items(formation.get("participants"))
        ):
            return deny("not_in_formation", act_id)
    evidence = items(obj(envelope.get("context")).get("evidence"))
    prohibited = items(obj(authority.get("grounding")).get("prohibited_sources"))
    if any(source in prohibited for source in evidence):  # V18
        return deny("grounding_source_prohibited", act_id)
    session = session_mode(envelope)
    mode = grant_mode(grant) if session is None else min(grant_mode(grant), session)
    if mode == PLAN and official:  # V19: a session never loosens the grant
        return deny("mode_plan_prepares_only", act_id)
    kind = authority.get("kind")
    ceiling = obj(grant.get("ceilings")).get(kind) if isinstance(kind, str) else None
    if official and ceiling == "proposal":  # V20
        return deny("ceiling_proposal_only", act_id)
    return Act(authority, act_id, actor, mode, official, ceiling)


def _first(authorities: list[dict[str, Any]], act_id: Any) -> dict[str, Any] | None:
    return next((a for a in authorities if a.get("act_id") == act_id), None)
