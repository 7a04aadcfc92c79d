"""A chase's stage or a cadence's time handled late (the chonk service away across what
came next) times what follows from now. Counted from the late one's due time, the next was
in the past: the scheduler refused it, the fire was dropped as refused, and the chase or
the cadence stopped for good."""

import uuid
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts import scheduler
from libs.contracts.streams import timer_subject
from services.chonk.domain import ladder
from services.chonk.domain.cadences import next_at
from tests.chonk.conftest import ORG, cadence_timer, person
from tests.chonk.test_cadences import WEEKLY
from tests.chonk.test_chaser_followups import STOCKHOLM, _pending
from tests.personal.conftest import eventually


@pytest.fixture
async def rooms_service():
    """The rooms away, so nothing late is told to anyone here."""
    yield None


async def _fired_late(operator, key: str, target: str, due: datetime, payload: dict) -> tuple:
    fired = scheduler.Fired(
        owner="chonk", key=key, target=target, due_at=due, fired_at=datetime.now(UTC),
        late_ms=(datetime.now(UTC) - due).total_seconds() * 1000, payload=payload,
    )  # fmt: skip
    js = operator.jetstream()
    return js, await js.publish(timer_subject("chonk", target), msgspec.json.encode(fired))


async def _done_with(operator, js, stored, *keys: str) -> None:
    """The timers it made cancelled, and the fire taken back: nothing of it reaches a later
    test's services."""
    for key in keys:
        cancel = msgspec.json.encode(scheduler.Cancel(key=key))
        await operator.request(scheduler.CANCEL.published_by("chonk"), cancel, timeout=5)
    await js.delete_msg(stored.stream, stored.seq)


async def test_a_chase_stage_handled_three_days_late_times_the_next_from_now(api, operator):
    run = f"run_chase_late_{uuid.uuid4().hex[:8]}"
    chase = ladder.Chase(
        org=ORG, chonk="build", title="Chief Build Officer", run=run, item="#419",
        owner=f"{ORG}/ben", owner_name="Ben", requester=f"{ORG}/ana", requester_name="Ana",
        mor=f"{ORG}/tomas", followup="A nudge on #419.", receipts="Receipts", hours=STOCKHOLM,
    )  # fmt: skip
    before = datetime.now(UTC)
    due = before - timedelta(days=3)
    js, stored = await _fired_late(
        operator, f"chase.{run}.1", "chase", due, msgspec.to_builtins(chase)
    )
    second = f"chase.{run}.2"
    held = await eventually(lambda: _pending(operator, second))
    at = datetime.fromisoformat(held["due_at"])
    assert ladder.due(before, 8, STOCKHOLM) <= at <= ladder.due(datetime.now(UTC), 8, STOCKHOLM)
    await _done_with(operator, js, stored, second)


async def test_a_cadence_time_handled_two_weeks_late_times_the_next_to_come(api, operator):
    started = await api.post(
        "/v1/chonk/cadences",
        json={"tenant": ORG, "cadence": "cad_owner_update"},
        headers=person("priya", roles=("admin",)),
    )
    assert started.status == 201, await started.text()
    coming = next_at(WEEKLY, datetime.now(UTC))
    cancel = msgspec.json.encode(scheduler.Cancel(key=cadence_timer(coming)))  # the start's
    await operator.request(scheduler.CANCEL.published_by("chonk"), cancel, timeout=5)
    missed = coming - timedelta(days=14)  # two Mondays ago: last Monday was missed too
    js, stored = await _fired_late(
        operator, cadence_timer(missed), "cadence", missed,
        {"org": ORG, "cadence": "cad_owner_update"},
    )  # fmt: skip
    held = await eventually(lambda: _pending(operator, cadence_timer(coming)))  # timed again
    assert datetime.fromisoformat(held["due_at"]) == coming
    await _done_with(operator, js, stored, cadence_timer(coming))
