"""A cadence whose run fails still comes round. Its next time was timed after the run, so
a run that failed every try (the rooms away), or was refused, left no next time: the
cadence stopped for good, while `GET /v1/chonk/cadences` still said it ran. The next time
is now timed before the run."""

from datetime import UTC, datetime

import pytest

from services.chonk.domain.cadences import next_at
from tests.chonk.conftest import CADENCE_DUE, ORG, cadence_timer, fire, person, taken_back
from tests.chonk.test_cadences import WEEKLY, _pending
from tests.personal.conftest import eventually


@pytest.fixture
async def rooms_service():
    """The rooms away: the owner update cannot be told to Priya."""
    yield None


async def test_a_cadence_whose_run_fails_is_timed_again(api, operator):
    started = await api.post(
        "/v1/chonk/cadences",
        json={"tenant": ORG, "cadence": "cad_owner_update"},
        headers=person("priya", roles=("admin",)),
    )
    assert started.status == 201, await started.text()
    due = next_at(WEEKLY, datetime.now(UTC))
    js, stored = await fire(operator, cadence_timer(due), "cadence", due, CADENCE_DUE)

    async def tried_and_failed() -> bool:
        info = await js.consumer_info(stored.stream, "chonk")
        return info.num_redelivered > 0

    await eventually(tried_and_failed)
    following = next_at(WEEKLY, due)
    held = await eventually(lambda: _pending(operator, cadence_timer(following)))
    assert datetime.fromisoformat(held["due_at"]) == following
    await taken_back(operator, js, stored, cadence_timer(due), cadence_timer(following))
