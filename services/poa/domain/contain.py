"""Containment G9a (poa-verifier §4): every way a child grant carries more than its parent.

Unlike verification it does not stop at the first finding: C1 … C29 run in order and every
violation is listed in that order. Re-pointed identities are expected and never compared.
"""

from typing import Any

from services.poa.domain import formations, hours, targets
from services.poa.domain.decisions import MALFORMED, Containment
from services.poa.domain.reading import count, grant_mode, instant, items, money, obj, subset

__all__ = ["contain"]

_CEILING_RANK = {"proposal": 0, "on_confirm": 1, "self_within_limits": 2}


def contain(parent: Any, child: Any) -> Containment:
    """Never raises: input no rule can read is `malformed_input`, not contained."""
    try:
        found = _violations(obj(parent), obj(child))
    except Exception:  # a rule met a shape it cannot read: fail closed
        found = [MALFORMED]
    return Containment(ok=not found, violations=tuple(found))


def _violations(parent: dict[str, Any], child: dict[str, Any]) -> list[str]:
    return [
        *_lineage(parent, child),
        *_authorities(parent, child),
        *_defaults(parent, child),
        *formations.violations(parent, child),
    ]


def _lineage(parent: dict[str, Any], child: dict[str, Any]) -> list[str]:
    found = []
    p_delegation, c_delegation = obj(parent.get("delegation")), obj(child.get("delegation"))
    if obj(child.get("principal")).get("sub") != obj(parent.get("principal")).get("sub"):
        found.append("principal_changed")  # C1
    if p_delegation.get("allowed") is not True:
        found.append("delegation_not_allowed")  # C2
    expected = [*_links(p_delegation), (parent.get("grant_id"), _delegate(parent))]
    if _links(c_delegation) != expected:
        found.append("chain_broken")  # C3
    named = items(p_delegation.get("named_agents"))
    if named and obj(child.get("delegate")).get("name") not in named:
        found.append("delegate_not_named")  # C4
    parent_depth = count(p_delegation.get("max_depth")) or 0
    if len(items(c_delegation.get("chain"))) > parent_depth:
        found.append("depth_exceeded")  # C5
    child_depth = 0 if c_delegation.get("max_depth") is None else count(c_delegation["max_depth"])
    if child_depth is None or child_depth > parent_depth:
        found.append("max_depth_wider")  # C6
    p_valid, c_valid = obj(parent.get("validity")), obj(child.get("validity"))
    if p_valid.get("expires") is not None:  # C7
        p, c = instant(p_valid["expires"]), instant(c_valid.get("expires"))
        if p is None or c is None or c > p:
            found.append("expires_wider")
    if p_valid.get("not_before") is not None:  # C8
        p, c = instant(p_valid["not_before"]), instant(c_valid.get("not_before"))
        if p is None or c is None or c < p:
            found.append("not_before_wider")
    return found


def _authorities(parent: dict[str, Any], child: dict[str, Any]) -> list[str]:
    found = []
    child_denied = [
        (obj(d).get("act_id"), obj(d).get("effect")) for d in items(child.get("denied"))
    ]
    for denial in map(obj, items(parent.get("denied"))):  # C9
        if (denial.get("act_id"), denial.get("effect")) not in child_denied:
            found.append(f"denial_dropped:{denial.get('act_id')}")
    held = [obj(a) for a in items(parent.get("authorities"))]
    for authority in map(obj, items(child.get("authorities"))):
        act = authority.get("act_id")
        match = next((a for a in held if a.get("act_id") == act), None)
        if match is None or (match.get("effect"), match.get("kind")) != (
            authority.get("effect"),
            authority.get("kind"),
        ):
            found.append(f"authority_added:{act}")  # C10
            continue
        found += [
            f"limit_raised:{act}.{k}" for k in _raised(match.get("limits"), authority.get("limits"))
        ]
        p_targets = targets.effective_targets(match, parent)
        if not targets.within(targets.effective_targets(authority, child), p_targets):
            found.append(f"targets_widened:{act}")  # C12
        if authority.get("go_ahead") == "standing" and match.get("go_ahead") != "standing":
            found.append(f"go_ahead_loosened:{act}")  # C13
        if authority.get("commit") == "automatic" and match.get("commit") != "automatic":
            found.append(f"commit_loosened:{act}")  # C14
        if not subset(_allowed(authority, child), _allowed(match, parent)):
            found.append(f"allowed_source_added:{act}")  # C15
        p_prohibited = items(obj(match.get("grounding")).get("prohibited_sources"))
        if not subset(
            p_prohibited, items(obj(authority.get("grounding")).get("prohibited_sources"))
        ):
            found.append(f"prohibited_source_dropped:{act}")  # C16
    return found


def _defaults(parent: dict[str, Any], child: dict[str, Any]) -> list[str]:
    found = []
    p_ceilings, c_ceilings = obj(parent.get("ceilings")), obj(child.get("ceilings"))
    for kind in [*p_ceilings, *(k for k in c_ceilings if k not in p_ceilings)]:  # C17
        if _ceiling(c_ceilings.get(kind)) > _ceiling(p_ceilings.get(kind)):
            found.append(f"ceiling_loosened:{kind}")
    if grant_mode(child) > grant_mode(parent):
        found.append("autonomy_loosened")  # C18
    p, c = obj(parent.get("defaults")), obj(child.get("defaults"))
    found += [f"limit_raised:defaults.{k}" for k in _raised(p.get("limits"), c.get("limits"))]
    if p.get("max_binding_per_day") is not None:  # C19, after the limits
        if _raised({"cap": p["max_binding_per_day"]}, {"cap": c.get("max_binding_per_day")}):
            found.append("limit_raised:defaults.max_binding_per_day")
    if not targets.within(items(c.get("targets")), items(p.get("targets"))):
        found.append("targets_widened:defaults")  # C20
    if not subset(_triggers(c), _triggers(p)):
        found.append("triggers_widened")  # C21
    if p.get("hours") is not None and not hours.within(c.get("hours"), p["hours"]):
        found.append("hours_widened")  # C22
    if _pace(c) > _pace(p):
        found.append("pace_loosened")  # C23
    p_allowed = items(obj(p.get("grounding")).get("allowed_sources"))
    if not subset(items(obj(c.get("grounding")).get("allowed_sources")), p_allowed):
        found.append("allowed_source_added:defaults")  # C24
    if _unnamed(child) > _unnamed(parent):
        found.append("unnamed_agents_widened")  # C25
    return found


def _raised(parent_limits: Any, child_limits: Any) -> list[str]:
    """C11/C19: the parent's keys (in its order) whose child value is absent or wider."""
    if not isinstance(parent_limits, dict):
        return []
    child_limits = obj(child_limits)
    raised = []
    for key, limit in parent_limits.items():
        if limit is None:
            continue
        value = child_limits.get(key)
        if money(limit) is not None:
            wider = money(value) is None or money(value) > money(limit)
        elif isinstance(limit, list):
            wider = not isinstance(value, list) or not subset(value, limit)
        else:
            wider = value != limit
        if wider:
            raised.append(key)
    return raised


def _links(delegation: dict[str, Any]) -> list[tuple[Any, Any]]:
    return [
        (obj(link).get("grant_id"), obj(link).get("delegate_sub"))
        for link in items(delegation.get("chain"))
    ]


def _delegate(grant: dict[str, Any]) -> Any:
    return obj(grant.get("delegate")).get("sub")


def _allowed(authority: dict[str, Any], grant: dict[str, Any]) -> list[Any]:
    """An authority's allowed sources if it names them, else the grant-wide ones."""
    grounding = obj(authority.get("grounding"))
    if "allowed_sources" in grounding:
        return items(grounding["allowed_sources"])
    return items(obj(obj(grant.get("defaults")).get("grounding")).get("allowed_sources"))


def _triggers(defaults: dict[str, Any]) -> list[Any]:
    return ["asked"] if defaults.get("triggers") is None else items(defaults["triggers"])


def _ceiling(value: Any) -> int:
    return _CEILING_RANK.get(value, 1) if isinstance(value, str) else 1


def _pace(defaults: dict[str, Any]) -> int:
    return 1 if defaults.get("pace") == "act_then_tell" else 0


def _unnamed(grant: dict[str, Any]) -> int:
    return 1 if obj(grant.get("work_system")).get("unnamed_agents") == "read_draft" else 0
