"""Shift cover after a call-out (§2's ops charter: "atoms scheduling, swaps, call-outs";
EC-MGR-009): who may take the rest of a shift, by the tenant's labor rules.

A worker is a candidate when they hold every certification the station needs, are on no
other shift that overlaps what is left of this one, have rested the minimum since their
last shift, and would rest it again before their next. The weekly hours cap binds too,
except under the call-out exception, which lifts it: a candidate over the cap is then
overtime, which the Chonk may not arrange on its own (PROPOSE_CONFIRM). Candidates come
fewest hours first, so cover falls evenly."""

from collections.abc import Sequence
from datetime import datetime, timedelta

import msgspec

from services.chonk.domain.types import SourceRef

__all__ = [
    "Candidate",
    "LaborRules",
    "Shift",
    "Unfit",
    "Worker",
    "asked_because",
    "offered_because",
    "solve",
]


class Shift(msgspec.Struct, frozen=True):
    id: str
    station: str
    start: datetime
    end: datetime
    assigned: tuple[str, ...] = ()


class Worker(msgspec.Struct, frozen=True, rename="camel"):
    id: str
    name: str
    certifications: frozenset[str]
    weekly_hours: float  # already worked or scheduled this week
    shifts: tuple[Shift, ...] = ()  # their own shifts this week


class LaborRules(msgspec.Struct, frozen=True, rename="camel"):
    max_weekly_hours: float
    min_rest_hours: float
    call_out_lifts_caps: bool = True  # the call-out exception


class Candidate(msgspec.Struct, frozen=True):
    worker: str
    name: str
    hours_after: float
    overtime: bool


class Unfit(msgspec.Struct, frozen=True):
    worker: str
    name: str
    reason: str


def solve(
    shift: Shift,
    needs: frozenset[str],
    staff: Sequence[Worker],
    rules: LaborRules,
    *,
    now: datetime,
    call_out: bool,
) -> tuple[list[Candidate], list[Unfit]]:
    """Who may cover what is left of `shift` from `now`, best first, and why each other
    worker may not."""
    start = max(now, shift.start)
    hours = (shift.end - start) / timedelta(hours=1)
    candidates, unfit = [], []
    for w in staff:
        if w.id in shift.assigned:
            continue
        reason = _unfit(w, shift, needs, rules, start=start, hours=hours, call_out=call_out)
        if reason is not None:
            unfit.append(Unfit(w.id, w.name, reason))
            continue
        after = w.weekly_hours + hours
        candidates.append(Candidate(w.id, w.name, after, after > rules.max_weekly_hours))
    candidates.sort(key=lambda c: (c.overtime, c.hours_after, c.name))
    return candidates, unfit


def _unfit(
    w: Worker,
    shift: Shift,
    needs: frozenset[str],
    rules: LaborRules,
    *,
    start: datetime,
    hours: float,
    call_out: bool,
) -> str | None:
    if missing := sorted(needs - w.certifications):
        return f"not certified for the {shift.station}: {', '.join(missing)}"
    for other in w.shifts:
        if other.start < shift.end and start < other.end:
            return f"on {other.station} until {other.end:%H:%M}"
    ended = [s.end for s in w.shifts if s.end <= start]
    if ended and (rested := (start - max(ended)) / timedelta(hours=1)) < rules.min_rest_hours:
        return f"rested {rested:.1f} h of the {rules.min_rest_hours:g} h minimum"
    # The rest is owed before their next shift too: covering must not cut it short.
    if later := [s for s in w.shifts if s.start >= shift.end]:
        nxt = min(later, key=lambda s: s.start)
        if (rest := (nxt.start - shift.end) / timedelta(hours=1)) < rules.min_rest_hours:
            return (
                f"would rest {rest:.1f} h of the {rules.min_rest_hours:g} h minimum "
                f"before their {nxt.station} shift at {nxt.start:%H:%M}"
            )
    after = w.weekly_hours + hours
    if after > rules.max_weekly_hours and not (call_out and rules.call_out_lifts_caps):
        return f"would work {after:g} h of a {rules.max_weekly_hours:g} h week"
    return None


def offered_because(
    shift: Shift, needs: frozenset[str], rules: LaborRules, candidate: Candidate, *, now: datetime
) -> tuple[SourceRef, ...]:
    """What a candidate's text rests on: the SMS surface shows no markers and ends "Reply
    WHY", which these answer (§7: the receipt exists in full regardless)."""
    hours = SourceRef(
        n=3, kind="org", ref=f"hours:{candidate.worker}",
        label=f"Your hours this week with tonight: {candidate.hours_after:.1f}", as_of=now,
    )  # fmt: skip
    return (
        _roster(shift, now),
        _needs(shift, needs, now, "you hold each"),
        hours,
        _rules(rules, now),
    )


def asked_because(
    shift: Shift,
    needs: frozenset[str],
    rules: LaborRules,
    asked: Sequence[str],
    *,
    now: datetime,
) -> tuple[SourceRef, ...]:
    """What the reporter's confirmation rests on: who was free and fit, fewest hours first."""
    fit = ", ".join(asked) or "no one"
    free = SourceRef(
        n=3, kind="org", ref=f"roster:{shift.id}:free",
        label=f"Free tonight, certified and within the rules, fewest hours first: {fit}",
        as_of=now,
    )  # fmt: skip
    return (
        _roster(shift, now),
        _needs(shift, needs, now, "each one asked holds them"),
        free,
        _rules(rules, now),
    )


def _roster(shift: Shift, now: datetime) -> SourceRef:
    return SourceRef(
        n=1, kind="org", ref=f"roster:{shift.id}",
        label=f"Roster: the {shift.station} until {shift.end:%H:%M}, one short", as_of=now,
    )  # fmt: skip


def _needs(shift: Shift, needs: frozenset[str], now: datetime, held: str) -> SourceRef:
    return SourceRef(
        n=2, kind="org", ref=f"certifications:{shift.station}",
        label=f"The {shift.station} needs {', '.join(sorted(needs)) or 'no certification'}; {held}",
        as_of=now,
    )  # fmt: skip


def _rules(rules: LaborRules, now: datetime) -> SourceRef:
    cap = f"{rules.max_weekly_hours:g} h a week"
    if rules.call_out_lifts_caps:
        cap += " (a call-out lifts it; past it is overtime)"
    return SourceRef(
        n=4, kind="policy", ref="labor-rules",
        label=f"Labor rules: {cap}; {rules.min_rest_hours:g} h rest between shifts", as_of=now,
    )  # fmt: skip
