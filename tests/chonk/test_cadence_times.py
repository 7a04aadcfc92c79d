"""When a cadence comes round (`domain/cadences.py`): always after the time it is asked
from, at its wall time in its zone, on its weekday, the days daylight saving skips or
repeats an hour included."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.chonk.domain.cadences import Cadence, next_at, run_id

ZONES = ("America/Los_Angeles", "Europe/Stockholm", "Australia/Lord_Howe", "Asia/Kolkata", "UTC")


def test_started_in_the_hour_a_day_repeats_it_comes_round_after_not_before():
    # 2026-11-01 in Los Angeles: 01:00 to 02:00 comes twice. 09:15 UTC is the second
    # 01:15; the first 01:30 was 08:30 UTC, already gone.
    nightly = Cadence(run="r", at=time(1, 30), zone="America/Los_Angeles")
    started = datetime(2026, 11, 1, 9, 15, tzinfo=UTC)
    assert next_at(nightly, started) == datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    # Once a day, at the first of the two: fired at 08:30 UTC, the next is tomorrow's.
    fired = datetime(2026, 11, 1, 8, 30, tzinfo=UTC)
    assert next_at(nightly, fired) == datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


@given(
    after=st.datetimes(
        min_value=datetime(2026, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)
    ),
    at=st.times(),
    zone=st.sampled_from(ZONES),
    weekday=st.none() | st.integers(0, 6),
)
def test_it_comes_round_after_at_its_wall_time_on_its_weekday(after, at, zone, weekday):
    cadence = Cadence(run="r", at=at, zone=zone, weekday=weekday)
    due = next_at(cadence, after)
    assert after < due <= after + timedelta(days=8, hours=2)
    local = due.astimezone(ZoneInfo(zone))
    assert weekday is None or local.weekday() == weekday
    # At its wall time, unless the day skips that time (spring forward).
    wall = datetime.combine(local.date(), at)
    there = datetime.combine(local.date(), at, ZoneInfo(zone)).astimezone(UTC)
    exists = there.astimezone(ZoneInfo(zone)).replace(tzinfo=None) == wall
    assert local.replace(tzinfo=None) == wall or not exists


def test_a_daily_run_across_the_spring_forward_is_named_apart_from_the_day_before():
    # 2026-03-29 in Berlin: summer time begins. Sunday's 01:30 is 00:30 UTC, Monday's is
    # 23:30 UTC the same Sunday: one name would have run Monday's as Sunday's, done.
    nightly = Cadence(run="r", at=time(1, 30), zone="Europe/Berlin")
    sunday = next_at(nightly, datetime(2026, 3, 28, 12, tzinfo=UTC))
    monday = next_at(nightly, sunday)
    assert (sunday.date(), monday.date()) == (datetime(2026, 3, 29).date(),) * 2
    assert run_id(nightly, "run_x", sunday) == "run_x_20260329"
    assert run_id(nightly, "run_x", monday) == "run_x_20260330"


@pytest.mark.parametrize("cadence", [
    {"run": "r", "at": "07:00:00", "zone": "UTC", "weekday": 7},
    {"run": "r", "at": "07:00:00", "zone": "Mars/Olympus_Mons"},
])  # fmt: skip
def test_a_cadence_that_never_comes_round_is_refused_by_name(cadence):
    """A weekday past Sunday never came round: its next time was sought a day at a time
    until the calendar ran out."""
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(cadence, Cadence)
