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

__all__ = ["Candidate", "LaborRules", "Shift", "Unfit", "Worker", "solve"]


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
