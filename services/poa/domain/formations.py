"""Formations travel with the delegated act (poa-verifier §4.5, C26-C29)."""

from typing import Any

from services.poa.domain.reading import covers, items, money, obj, subset

__all__ = ["violations"]


def violations(parent: dict[str, Any], child: dict[str, Any]) -> list[str]:
    found = []
    child_acts = [obj(a).get("act_id") for a in items(child.get("authorities"))]
    formations = [obj(f) for f in items(child.get("formations"))]
    for formation in map(obj, items(parent.get("formations"))):
        acts = [a for a in child_acts if covers(formation, a)]
        if not acts:
            continue
        arrangement = formation.get("arrangement")
        same = [f for f in formations if f.get("arrangement") == arrangement]
        match = next((f for f in same if f.get("name") == formation.get("name")), None)
        match = match or (same[0] if same else None)
        if match is None or not all(covers(match, a) for a in acts):
            found.append(f"formation_dropped:{arrangement}")  # C26
            continue
        if _gate_dropped(formation, match, acts):
            found.append(f"formation_gate_dropped:{arrangement}")  # C27
        if formation.get("protocol") is not None and match.get("protocol") != formation["protocol"]:
            found.append(f"formation_protocol_changed:{arrangement}")  # C28
        if _settlement_weakened(obj(formation.get("settlement")), obj(match.get("settlement"))):
            found.append(f"formation_settlement_weakened:{arrangement}")  # C29
    return found


def _gate_dropped(parent: dict[str, Any], child: dict[str, Any], acts: list[Any]) -> bool:
    gates = [
        t for t in map(obj, items(parent.get("transitions"))) if t.get("authority") == "human_gate"
    ]
    kept = [
        t for t in map(obj, items(child.get("transitions"))) if t.get("authority") == "human_gate"
    ]
    return any(
        covers(gate, act)
        and not any(k.get("to") == gate.get("to") and covers(k, act) for k in kept)
        for gate in gates
        for act in acts
    )


def _settlement_weakened(parent: dict[str, Any], child: dict[str, Any]) -> bool:
    if child.get("kind") != parent.get("kind"):
        return True
    needed = obj(parent.get("threshold")).get("approvals")
    if needed is not None:
        given = obj(child.get("threshold")).get("approvals")
        if money(needed) is None:
            if given != needed:
                return True
        elif money(given) is None or money(given) < money(needed):
            return True
    return not subset(items(parent.get("evidence")), items(child.get("evidence")))
