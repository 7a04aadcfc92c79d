"""Handoffs between Chonks (§8): data on the bus, on the sending run's correlation id; the
receiver may decline with a reason, and two disagreements between the same pair go to
Chonksworth's triage. A handoff whose table row sets a condition is admitted only when it
holds (EC-MGR-007)."""

from collections.abc import Sequence

import msgspec

from libs.contracts.chonk import HandoffRequest

__all__ = ["Decision", "HandoffRequest", "admitted", "to_triage"]

# §8's table: the (from, to, reason) a handoff may take; "*" is any Chonk.
ROUTES: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("build", "human", "people_problem"),
        ("build", "fin", "budget_impact"),
        ("build", "security", "security_or_safety"),
        ("ops", "fin", "budget_impact"),
        ("ops", "human", "quiet_hr"),
        ("ops", "human", "people_problem"),
        ("porpoise", "ops", "scope_change"),
        ("revenue", "fin", "deal_desk"),
        ("human", "chonksworth", "owner_escalation"),
        ("*", "marketing", "recognition"),
        ("*", "security", "security_or_safety"),
        ("*", "chonksworth", "cross_org_dependency"),
        # §2 and EC-MGR-001: a question the never list reserves for a person, asked of any
        # Chonk, goes to the Chief Human Officer to prepare a packet; §8's table names no
        # reason for it.
        ("*", "human", "other"),
    }
)


class Decision(msgspec.Struct, frozen=True):
    accepted: bool
    reason: str


def admitted(
    request: HandoffRequest, *, ladder_stage: int = 0, stalls_30d: int = 0, said: bool = False
) -> Decision:
    """The receiver's first check, before its planner sees the request: the route is one of
    §8's, and its condition holds (build → human for a people problem: the ladder went
    through stage 2 and the person stalled at least 3 items in 30 days, or someone said
    in-thread that it is load, conflict or unclear ownership)."""
    r = request
    if not ({(r.from_chonk, r.to_chonk, r.reason), ("*", r.to_chonk, r.reason)} & ROUTES):
        return Decision(False, f"no handoff from {r.from_chonk} to {r.to_chonk} for {r.reason}")
    if (r.from_chonk, r.to_chonk, r.reason) == ("build", "human", "people_problem"):
        if ladder_stage < 2:
            return Decision(False, "the ladder has not been through stage 2")
        if stalls_30d < 3 and not said:
            return Decision(
                False,
                f"{stalls_30d} stalls in 30 days and nothing said in-thread: not yet a people "
                "problem; continue the ladder",
            )
    return Decision(True, "admitted")


def to_triage(declines: Sequence[HandoffRequest]) -> list[tuple[str, str]]:
    """The pairs of Chonks that disagreed twice: Chonksworth's triage takes them."""
    pairs: dict[tuple[str, str], int] = {}
    for d in declines:
        pair = tuple(sorted((d.from_chonk, d.to_chonk)))
        pairs[pair] = pairs.get(pair, 0) + 1  # type: ignore[index]
    return sorted(p for p, n in pairs.items() if n >= 2)  # type: ignore[misc]
