"""A chase's stage that cannot be said still leaves the next one timed. The next stage was
timed after this one was said, so a stage the rooms could not take (away past every try)
left none: the chase stopped, and the manager of record was never told. It is now timed
first."""

import uuid
from datetime import UTC, datetime

import msgspec
import pytest

from libs.contracts import scheduler
from libs.contracts.streams import timer_subject
from services.chonk.domain import ladder
from tests.chonk.conftest import ORG
from tests.chonk.test_chaser_followups import STOCKHOLM, _pending
from tests.personal.conftest import eventually


@pytest.fixture
async def rooms_service():
    """The rooms away: no replica serves their subjects."""
    yield None


async def test_a_stage_the_rooms_cannot_take_still_times_the_next(api, operator):
    run = f"run_chase_away_{uuid.uuid4().hex[:8]}"  # a chase of its own, as a run's would be
    chase = ladder.Chase(
        org=ORG, chonk="build", title="Chief Build Officer", run=run, item="#419",
        owner=f"{ORG}/ben", owner_name="Ben", requester=f"{ORG}/ana", requester_name="Ana",
        mor=f"{ORG}/tomas", followup="A nudge on #419.", receipts="Receipts", hours=STOCKHOLM,
    )  # fmt: skip
    due = datetime.now(UTC)
    fired = scheduler.Fired(
        owner="chonk", key=f"chase.{run}.1", target="chase", due_at=due, fired_at=due,
        late_ms=0.0, payload=msgspec.to_builtins(chase),
    )  # fmt: skip
    js = operator.jetstream()
    stored = await js.publish(timer_subject("chonk", "chase"), msgspec.json.encode(fired))

    async def tried_and_failed() -> bool:
        return (await js.consumer_info(stored.stream, "chonk")).num_redelivered > 0

    await eventually(tried_and_failed)
    second = f"chase.{run}.2"
    held = await eventually(lambda: _pending(operator, second))
    assert datetime.fromisoformat(held["due_at"]) == ladder.due(due, 8, STOCKHOLM)
    cancel = msgspec.json.encode(scheduler.Cancel(key=second))  # so it never fires here
    await operator.request(scheduler.CANCEL.published_by("chonk"), cancel, timeout=5)
    # And the fire, tried again while the rooms are away, taken back: no later test's
    # services, with the rooms there, carry it out.
    await js.delete_msg(stored.stream, stored.seq)
