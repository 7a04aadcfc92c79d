"""A chase's stage or a cadence's time handled late (the chonk service away across what
came next) times what follows from now. Counted from the late one's due time, the next was
in the past: the scheduler refused it, the fire was dropped as refused, and the chase or
the cadence stopped for good."""

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from services.chonk.domain import ladder
from services.chonk.domain.cadences import next_at
from tests.chonk.conftest import (
    CADENCE_DUE,
    ORG,
    cadence_timer,
    cancelled,
    fire,
    own_chase,
    person,
    taken_back,
)
from tests.chonk.test_cadences import WEEKLY
from tests.chonk.test_chaser_followups import STOCKHOLM, _pending
from tests.personal.conftest import eventually


@pytest.fixture
async def rooms_service():
    """The rooms away, so nothing late is told to anyone here."""
    yield None


async def test_a_chase_stage_handled_three_days_late_times_the_next_from_now(api, operator):
    chase = own_chase("chase_late")
    before = datetime.now(UTC)
    due = before - timedelta(days=3)
    key = f"chase.{chase.run}.1"
    js, stored = await fire(operator, key, "chase", due, msgspec.to_builtins(chase))
    second = f"chase.{chase.run}.2"
    held = await eventually(lambda: _pending(operator, second))
    at = datetime.fromisoformat(held["due_at"])
    assert ladder.due(before, 8, STOCKHOLM) <= at <= ladder.due(datetime.now(UTC), 8, STOCKHOLM)
    await taken_back(operator, js, stored, second)


async def test_a_cadence_time_handled_two_weeks_late_times_the_next_to_come(api, operator):
    started = await api.post(
        "/v1/chonk/cadences",
        json={"tenant": ORG, "cadence": "cad_owner_update"},
        headers=person("priya", roles=("admin",)),
    )
    assert started.status == 201, await started.text()
    coming = next_at(WEEKLY, datetime.now(UTC))
    await cancelled(operator, cadence_timer(coming))  # the one its start timed
    missed = coming - timedelta(days=14)  # two Mondays ago: last Monday was missed too
    js, stored = await fire(operator, cadence_timer(missed), "cadence", missed, CADENCE_DUE)
    held = await eventually(lambda: _pending(operator, cadence_timer(coming)))  # timed again
    assert datetime.fromisoformat(held["due_at"]) == coming
    await taken_back(operator, js, stored, cadence_timer(coming))
