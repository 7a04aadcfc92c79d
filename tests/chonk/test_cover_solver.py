"""The shift-cover solver (EC-MGR-009), pure: certifications, other shifts, rest, the weekly
hours cap and the call-out exception that lifts it, and the order candidates come in; and
the roster it reads, refused when it cannot be worked."""

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from services.chonk.covering import Scene
from services.chonk.domain.cover import LaborRules, Shift, Worker, solve

NOW = datetime(2026, 9, 8, 20, 55, tzinfo=UTC)
SHIFT = Shift(
    id="s1", station="line", start=NOW - timedelta(hours=1), end=NOW + timedelta(hours=6),
    assigned=("rosa", "jamal"),
)  # fmt: skip
NEEDS = frozenset({"food_safety", "line_cook"})
RULES = LaborRules(max_weekly_hours=40, min_rest_hours=10)
CERTIFIED = frozenset(NEEDS)


def _w(id_: str, hours: float, certs=CERTIFIED, shifts=()) -> Worker:
    return Worker(id=id_, name=id_.title(), certifications=certs, weekly_hours=hours,
                  shifts=shifts)  # fmt: skip


def _other(station: str, start_h: int, end_h: int) -> Shift:
    return Shift("other", station, NOW + timedelta(hours=start_h), NOW + timedelta(hours=end_h))


def test_each_rule_excludes_by_name_and_the_rest_come_fewest_hours_first():
    staff = [
        _w("rosa", 20),  # on the shift already
        _w("ann", 30),
        _w("bo", 10),
        _w("cy", 36),  # 42 h after: overtime, which the call-out exception allows
        _w("dan", 5, certs=frozenset({"food_safety"})),
        _w("eve", 5, shifts=(_other("bar", -2, 1),)),  # overlaps
        _w("fay", 5, shifts=(_other("prep", -14, -5),)),  # ended 5 h ago
        _w("gus", 5, shifts=(_other("prep", -20, -11),)),  # ended 11 h ago
    ]
    candidates, unfit = solve(SHIFT, NEEDS, staff, RULES, now=NOW, call_out=True)
    assert [(c.worker, c.hours_after, c.overtime) for c in candidates] == [
        ("gus", 11.0, False), ("bo", 16.0, False), ("ann", 36.0, False), ("cy", 42.0, True)
    ]  # fmt: skip
    assert {u.worker: u.reason for u in unfit} == {
        "dan": "not certified for the line: line_cook",
        "eve": "on bar until 21:55",
        "fay": "rested 5.0 h of the 10 h minimum",
    }


def test_without_the_call_out_exception_the_cap_binds():
    candidates, unfit = solve(SHIFT, NEEDS, [_w("cy", 36)], RULES, now=NOW, call_out=False)
    assert candidates == []
    assert [u.reason for u in unfit] == ["would work 42 h of a 40 h week"]
    strict = LaborRules(max_weekly_hours=40, min_rest_hours=10, call_out_lifts_caps=False)
    candidates, _ = solve(SHIFT, NEEDS, [_w("cy", 36)], strict, now=NOW, call_out=True)
    assert candidates == []


def test_only_what_is_left_of_the_shift_counts():
    later = NOW + timedelta(hours=4)
    (c,), _ = solve(SHIFT, NEEDS, [_w("ann", 30)], RULES, now=later, call_out=True)
    assert c.hours_after == 32.0


def test_covering_must_leave_the_minimum_rest_before_the_next_shift():
    # The shift ends at 02:55; a 10 h rest is owed before whatever comes next.
    staff = [
        _w("hal", 5, shifts=(_other("prep", 14, 20),)),  # 08:55: 8 h after the cover
        _w("ida", 5, shifts=(_other("prep", 16, 22),)),  # 10:55: 10 h after, enough
    ]
    candidates, unfit = solve(SHIFT, NEEDS, staff, RULES, now=NOW, call_out=True)
    assert [c.worker for c in candidates] == ["ida"]
    assert {u.worker: u.reason for u in unfit} == {
        "hal": "would rest 8.0 h of the 10 h minimum before their prep shift at 10:55",
    }


@pytest.mark.parametrize("minutes", [0, -5])
def test_a_roster_whose_escalation_would_be_due_at_once_is_refused_by_name(minutes):
    """A call-out's escalation is timed before anyone is texted, and the scheduler refuses
    a time that has come: such a roster failed every call-out it met."""
    scene = {"now": "2026-09-08T16:55:00-04:00", "escalateAfterMinutes": minutes,
             "stations": {}, "rules": {"maxWeeklyHours": 40, "minRestHours": 10},
             "shifts": [], "staff": []}  # fmt: skip
    with pytest.raises(msgspec.ValidationError, match="escalateAfterMinutes"):
        msgspec.convert(scene, Scene)
