"""What a Chonk times next comes round whatever becomes of the time at hand.

- A cadence's next time and a chase's next stage were timed after the run or the stage.
  One that failed every try (the rooms away), or was refused, left none: the cadence or
  the chase stopped for good, while `GET /v1/chonk/cadences` still said it ran. Each is
  now timed first.
- A time or a stage handled late (the chonk service away across the next) counted the
  next from its own due time. That was in the past, which the scheduler refuses, so the
  fire was dropped and the same happened. The next is now counted from now.

The rooms are away here, so nothing is told to anyone; each test takes back the fire it
published, which its services would otherwise carry out in a later test.
"""

import random
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from services.chonk.domain import ladder
from services.chonk.domain.cadences import next_at
from tests.chonk.conftest import (
    CADENCE_DUE,
    cadence_timer,
    cancelled,
    fire,
    own_chase,
    start_cadence,
    taken_back,
)
from tests.chonk.test_cadences import WEEKLY, _pending
from tests.chonk.test_chaser_followups import STOCKHOLM
from tests.personal.conftest import eventually


@pytest.fixture
async def rooms_service():
    """The rooms away: no replica serves their subjects."""
    yield None


async def test_a_cadence_whose_run_fails_is_timed_again(api, operator, acks):
    await start_cadence(api)
    # A Monday no other test runs the owner update for: its run is tried, and fails.
    due = next_at(WEEKLY, datetime.now(UTC) + timedelta(weeks=random.randrange(50, 5000)))
    js, stored = await fire(operator, cadence_timer(due), "cadence", due, CADENCE_DUE)
    await acks.tried("chonk", stored)
    following = next_at(WEEKLY, due)
    held = await eventually(lambda: _pending(operator, cadence_timer(following)))
    assert datetime.fromisoformat(held["due_at"]) == following
    await taken_back(operator, js, stored, cadence_timer(due), cadence_timer(following))


async def test_a_stage_the_rooms_cannot_take_still_times_the_next(api, operator, acks):
    chase = own_chase("chase_away")
    due = datetime.now(UTC)
    key = f"chase.{chase.org}.{chase.run}.1"
    js, stored = await fire(operator, key, "chase", due, msgspec.to_builtins(chase))
    await acks.tried("chonk", stored)
    second = f"chase.{chase.org}.{chase.run}.2"
    held = await eventually(lambda: _pending(operator, second))
    # Counted from when the stage was said, a moment after `due`: the same instant only
    # outside Stockholm's business hours, where both wait for the next opening.
    at = datetime.fromisoformat(held["due_at"])
    assert ladder.due(due, 8, STOCKHOLM) <= at <= ladder.due(datetime.now(UTC), 8, STOCKHOLM)
    await taken_back(operator, js, stored, second)


async def test_a_chase_stage_handled_three_days_late_times_the_next_from_now(api, operator):
    chase = own_chase("chase_late")
    before = datetime.now(UTC)
    due = before - timedelta(days=3)
    key = f"chase.{chase.org}.{chase.run}.1"
    js, stored = await fire(operator, key, "chase", due, msgspec.to_builtins(chase))
    second = f"chase.{chase.org}.{chase.run}.2"
    held = await eventually(lambda: _pending(operator, second))
    at = datetime.fromisoformat(held["due_at"])
    assert ladder.due(before, 8, STOCKHOLM) <= at <= ladder.due(datetime.now(UTC), 8, STOCKHOLM)
    await taken_back(operator, js, stored, second)


async def test_a_cadence_time_handled_two_weeks_late_times_the_next_to_come(api, operator):
    await start_cadence(api)
    coming = next_at(WEEKLY, datetime.now(UTC))
    await cancelled(operator, cadence_timer(coming))  # the one its start timed
    missed = coming - timedelta(days=14)  # two Mondays ago: last Monday was missed too
    js, stored = await fire(operator, cadence_timer(missed), "cadence", missed, CADENCE_DUE)
    held = await eventually(lambda: _pending(operator, cadence_timer(coming)))  # timed again
    assert datetime.fromisoformat(held["due_at"]) == coming
    await taken_back(operator, js, stored, cadence_timer(coming))
