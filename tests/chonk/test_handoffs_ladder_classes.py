"""manager-agents.md §8's handoffs (EC-MGR-007), §3.3's ladder in business hours, and the
classification of every ProposedAction."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.chonk.domain import classes, handoffs, ladder
from services.chonk.domain.types import ProposedAction


def handoff(**over) -> handoffs.HandoffRequest:
    fields = dict(
        id="hof_1",
        tenant_id="sim-lanternfish",
        from_chonk="build",
        to_chonk="human",
        reason="people_problem",
        subject_refs=("person:ben",),
        requested_action="Check in with Ben about his review load",
        receipt_id="rcp_1",
        correlation_id="cor_412",
        created_by_run_id="run_chase_412",
    )
    return handoffs.HandoffRequest(**(fields | over))


def test_ec_mgr_007_a_people_problem_after_two_stalls_only_is_declined_with_a_reason():
    decision = handoffs.admitted(handoff(), ladder_stage=2, stalls_30d=2)
    assert not decision.accepted and "2 stalls in 30 days" in decision.reason
    assert handoffs.admitted(handoff(), ladder_stage=2, stalls_30d=3).accepted
    assert handoffs.admitted(handoff(), ladder_stage=2, stalls_30d=0, said=True).accepted
    assert not handoffs.admitted(handoff(), ladder_stage=1, stalls_30d=5).accepted


def test_a_handoff_takes_only_the_routes_of_the_table():
    assert handoffs.admitted(
        handoff(from_chonk="ops", to_chonk="marketing", reason="recognition")
    ).accepted
    refused = handoffs.admitted(handoff(from_chonk="marketing", to_chonk="fin", reason="quiet_hr"))
    assert not refused.accepted and "no handoff from marketing to fin" in refused.reason


def test_two_disagreements_between_the_same_chonks_go_to_chonksworth_s_triage():
    one = handoff()
    back = handoff(id="hof_2", from_chonk="human", to_chonk="build", reason="other")
    assert handoffs.to_triage([one]) == []
    assert handoffs.to_triage([one, back]) == [("build", "human")]


STOCKHOLM = ladder.BusinessHours(zone="Europe/Stockholm")


@pytest.mark.parametrize(
    ("after", "hours", "expected"),
    [
        # Tuesday 10:00 Stockholm (08:00Z) + 4 business hours: 14:00 the same day
        (datetime(2026, 9, 8, 8, 0, tzinfo=UTC), 4, datetime(2026, 9, 8, 12, 0, tzinfo=UTC)),
        # Tuesday 15:00 Stockholm + 4: two hours left today, two tomorrow from 09:00
        (datetime(2026, 9, 8, 13, 0, tzinfo=UTC), 4, datetime(2026, 9, 9, 9, 0, tzinfo=UTC)),
        # Friday 16:00 Stockholm + 1 business day: Monday 16:00
        (datetime(2026, 9, 11, 14, 0, tzinfo=UTC), 8, datetime(2026, 9, 14, 14, 0, tzinfo=UTC)),
        # Saturday: the clock starts Monday 09:00
        (datetime(2026, 9, 12, 10, 0, tzinfo=UTC), 1, datetime(2026, 9, 14, 8, 0, tzinfo=UTC)),
    ],
)
def test_a_stage_s_wait_is_counted_in_the_tenant_s_business_hours(after, hours, expected):
    assert ladder.due(after, hours, STOCKHOLM) == expected


def test_a_tenant_open_past_midnight_counts_its_night_as_one_day():
    """A bar open 16:00 to 02:00: its day is ten hours, and an hour after midnight is
    still Tuesday's. Before, its close came before its opening each day, and counting a
    wait ran on, a day at a time, until the calendar ran out (OverflowError)."""
    bar = ladder.BusinessHours(zone="UTC", opens=time(16), closes=time(2))
    assert bar.day == timedelta(hours=10)
    tuesday_late = datetime(2026, 9, 8, 23, 0, tzinfo=UTC)
    # three hours to Wednesday's 02:00, then one from Wednesday's 16:00
    assert ladder.due(tuesday_late, 4, bar) == datetime(2026, 9, 9, 17, 0, tzinfo=UTC)
    after_midnight = datetime(2026, 9, 9, 1, 0, tzinfo=UTC)  # Tuesday's night, open
    assert ladder.due(after_midnight, 0.5, bar) == datetime(2026, 9, 9, 1, 30, tzinfo=UTC)
    assert ladder.stage_due(tuesday_late, ladder.STAGES[2], bar) == tuesday_late + timedelta(days=1)


@pytest.mark.parametrize(
    "hours",
    [
        {"zone": "UTC", "opens": "09:00:00", "closes": "09:00:00"},
        {"zone": "UTC", "weekdays": []},
        {"zone": "UTC", "weekdays": [7]},
        {"zone": "Mars/Olympus_Mons"},
    ],
)
def test_business_hours_that_are_never_open_are_refused_by_name(hours):
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(hours, ladder.BusinessHours)


def test_the_ladder_is_four_stages_and_the_last_goes_to_the_mor():
    assert [(s.wait, s.unit) for s in ladder.STAGES] == [
        (0, "hours"), (4, "hours"), (1, "days"), (4, "hours")
    ]  # fmt: skip
    assert ladder.STAGES[-1].recipient == "mor"


def test_a_business_day_is_as_long_as_the_tenant_is_open_in_one():
    """§3.3's stage 2 waits one business day: the same time on the next day the tenant
    opens, whatever its hours. Counted as eight hours, a tenant open 07:00 to 19:00 was
    told at 18:00 the same day, not at 10:00 the next."""
    long_days = msgspec.structs.replace(STOCKHOLM, opens=time(7), closes=time(19))
    tuesday_ten = datetime(2026, 9, 8, 8, 0, tzinfo=UTC)  # 10:00 in Stockholm
    stage_2 = ladder.STAGES[2]
    assert ladder.stage_due(tuesday_ten, stage_2, long_days) == tuesday_ten + timedelta(days=1)
    assert ladder.due(tuesday_ten, 8, long_days) == tuesday_ten + timedelta(hours=8)  # was
    assert ladder.stage_due(tuesday_ten, stage_2, STOCKHOLM) == tuesday_ten + timedelta(days=1)


NEVER = frozenset({"COMPENSATION", "PROMOTION"})


@pytest.mark.parametrize(
    ("kind", "modes", "expected"),
    [
        ("PACKET", {}, "HUMAN_ONLY"),
        ("COMPENSATION", {}, "HUMAN_ONLY"),
        ("HANDOFF", {"HANDOFF": "PROPOSE"}, "AUTONOMOUS"),
        ("ORG_CHANGE:plan", {"ORG_CHANGE": "PROPOSE"}, "PROPOSE_CONFIRM"),
        ("SEND_MESSAGE:ic_thread", {}, "AUTONOMOUS"),
    ],
)
def test_every_proposed_action_is_classified(kind, modes, expected):
    action = ProposedAction(kind=kind, to="x", receipt_id="rcp_1")
    assert classes.classified(action, never=NEVER, modes=modes) == expected


def _business_between(start: datetime, end: datetime, tenant: ladder.BusinessHours) -> timedelta:
    """The business time between two instants, each day's hours from its opening instant to
    its closing one in the tenant's zone."""
    zone, total = ZoneInfo(tenant.zone), timedelta(0)
    day = start.astimezone(zone).date() - timedelta(days=1)
    while day <= end.astimezone(zone).date():
        if day.weekday() in tenant.weekdays:
            opens = datetime.combine(day, tenant.opens, zone).astimezone(UTC)
            closes = datetime.combine(day, tenant.closes, zone).astimezone(UTC)
            total += max(timedelta(0), min(closes, end) - max(opens, start))
        day += timedelta(days=1)
    return total


# Nights a zone's clocks change, as instants: spring forward, then fall back.
CHANGES = [
    ("America/Los_Angeles", datetime(2026, 3, 8, 10, tzinfo=UTC)),
    ("America/Los_Angeles", datetime(2026, 11, 1, 9, tzinfo=UTC)),
    ("Europe/Stockholm", datetime(2026, 3, 29, 1, tzinfo=UTC)),
    ("Europe/Stockholm", datetime(2026, 10, 25, 1, tzinfo=UTC)),
]


@settings(max_examples=500)
@given(
    change=st.sampled_from(CHANGES),
    before=st.integers(0, 4 * 24 * 60),
    hours=st.sampled_from([0.5, 1, 4, 8, 12]),
    opens=st.integers(0, 2),
    weekdays=st.frozensets(st.integers(0, 6), min_size=1),
)
def test_a_wait_is_that_much_business_time_whatever_the_day_skips_or_repeats(
    change, before, hours, opens, weekdays
):
    """Counted between instants: a wait across a change of daylight saving inside the
    hours (a tenant open at night) is its hours of real time, never one more or less."""
    zone, night = change
    after = night - timedelta(minutes=before)
    tenant = ladder.BusinessHours(
        zone=zone, opens=time(opens, 30), closes=time(opens + 3, 59), weekdays=weekdays
    )
    at = ladder.due(after, hours, tenant)
    assert at > after
    assert _business_between(after, at, tenant) == timedelta(hours=hours)
