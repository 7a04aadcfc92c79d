"""Whether a formation's settlement is met by the record in the envelope (V21)."""

from typing import Any

from services.poa.domain.reading import count, identity, items, obj

__all__ = ["needs_settlement", "settled"]


def needs_settlement(formation: dict[str, Any]) -> bool:
    """A settlement that names no evidence needs no record (`gate_preserves_standing`)."""
    return bool(items(obj(formation.get("settlement")).get("evidence")))


def settled(formation: dict[str, Any], record: Any, trusted_runners: list[Any]) -> bool:
    settlement = obj(formation.get("settlement"))
    if not isinstance(record, dict) or record.get("kind") != settlement.get("kind"):
        return False
    evaluator = settlement.get("evaluator")
    if evaluator is not None and identity(record.get("evaluator")) != identity(evaluator):
        return False
    if any(item != "votes" for item in items(settlement.get("evidence"))):
        return False
    members = _members(formation)
    approvals = _approving(members, record, trusted_runners)
    threshold = obj(settlement.get("threshold")).get("approvals")
    needed = len(members) if threshold is None else count(threshold)
    return needed is not None and len(approvals) >= max(needed, 1)


def _members(formation: dict[str, Any]) -> list[str]:
    members: list[str] = []
    for participant in map(obj, items(formation.get("participants"))):
        actor = identity(participant.get("actor"))
        if participant.get("membership") == "member" and actor and actor not in members:
            members.append(actor)
    return members


def _approving(members: list[str], record: dict[str, Any], runners: list[Any]) -> set[str]:
    """Members whose attested verdicts are all `approve`; rejections do not veto others."""
    attesters = [identity(a) for a in items(record.get("attested_by"))]
    trusted = [identity(r) for r in runners]
    by_runner = any(a is not None and a in trusted for a in attesters)
    verdicts: dict[str, list[Any]] = {}
    for vote in map(obj, items(record.get("votes"))):
        actor = identity(vote.get("actor"))
        if actor in members and (by_runner or actor in attesters):
            verdicts.setdefault(actor, []).append(vote.get("verdict"))
    return {actor for actor, said in verdicts.items() if all(v == "approve" for v in said)}
