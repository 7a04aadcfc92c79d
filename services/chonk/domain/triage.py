"""Chonksworth's triage (§8, EC-MGR-003) and the charter-creep control (§11, RC-MGR-01).

Two Chonks proposing changes about the same person over overlapping dates do not both
happen: neither executes, and one priority decision goes to the owner. A Chonk that proposes
outside its action allowlist three times in a week has its functions regressed to PROPOSE."""

from collections.abc import Sequence
from datetime import date, datetime, timedelta

import msgspec

__all__ = ["Change", "PriorityDecision", "conflicts", "regressed"]


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """An ORG_CHANGE proposal naming a person (an assignment, a move) over some dates."""

    id: str
    chonk: str
    person: str
    what: str
    starts: date
    ends: date


class PriorityDecision(msgspec.Struct, frozen=True):
    """For the owner, PROPOSE_CONFIRM: which of the changes goes; until then, none does."""

    person: str
    changes: tuple[str, ...]
    question: str


def conflicts(changes: Sequence[Change]) -> tuple[list[PriorityDecision], frozenset[str]]:
    """(the decisions for the owner, the ids of the changes held until they are made)."""
    decisions: list[PriorityDecision] = []
    held: set[str] = set()
    by_person: dict[str, list[Change]] = {}
    for change in changes:
        by_person.setdefault(change.person, []).append(change)
    for person, mine in sorted(by_person.items()):
        clash = {
            c.id
            for a in mine
            for b in mine
            if a.chonk != b.chonk and a.starts <= b.ends and b.starts <= a.ends
            for c in (a, b)
        }
        if clash:
            ordered = tuple(sorted(clash))
            whats = "; or ".join(c.what for c in mine if c.id in clash)
            decisions.append(PriorityDecision(person, ordered, f"Which goes first: {whats}?"))
            held |= clash
    return decisions, frozenset(held)


def regressed(outside: Sequence[tuple[str, datetime]], now: datetime) -> frozenset[str]:
    """The Chonks with three or more actions outside their allowlist in the past week."""
    week = [chonk for chonk, at in outside if now - at <= timedelta(days=7)]
    return frozenset(c for c in set(week) if week.count(c) >= 3)
