"""A chase's stage that cannot be said still leaves the next one timed. The next stage was
timed after this one was said, so a stage the rooms could not take (away past every try)
left none: the chase stopped, and the manager of record was never told. It is now timed
first."""

from datetime import UTC, datetime

import msgspec
import pytest

from services.chonk.domain import ladder
from tests.chonk.conftest import fire, own_chase, taken_back
from tests.chonk.test_chaser_followups import STOCKHOLM, _pending
from tests.personal.conftest import eventually


@pytest.fixture
async def rooms_service():
    """The rooms away: no replica serves their subjects."""
    yield None


async def test_a_stage_the_rooms_cannot_take_still_times_the_next(api, operator):
    chase = own_chase("chase_away")
    due = datetime.now(UTC)
    key = f"chase.{chase.run}.1"
    js, stored = await fire(operator, key, "chase", due, msgspec.to_builtins(chase))

    async def tried_and_failed() -> bool:
        return (await js.consumer_info(stored.stream, "chonk")).num_redelivered > 0

    await eventually(tried_and_failed)
    second = f"chase.{chase.run}.2"
    held = await eventually(lambda: _pending(operator, second))
    assert datetime.fromisoformat(held["due_at"]) == ladder.due(due, 8, STOCKHOLM)
    await taken_back(operator, js, stored, second)
