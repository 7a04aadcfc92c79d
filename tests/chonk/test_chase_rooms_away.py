"""A chase's stage that cannot be said still leaves the next one timed. The next stage was
timed after this one was said, so a stage the rooms could not take (away past every try)
left none: the chase stopped, and the manager of record was never told. It is now timed
first."""

from datetime import datetime

import msgspec
from nats.errors import NoRespondersError

from libs.contracts import rooms, scheduler
from libs.contracts.streams import timer_subject
from services.chonk.domain import ladder
from tests.chonk.conftest import ORG
from tests.chonk.test_chaser_followups import ROOT, STOCKHOLM, _pending, _timer
from tests.personal.conftest import eventually


async def test_a_stage_the_rooms_cannot_take_still_times_the_next(api, operator, rooms_service):
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "chase_ben"}, headers=ROOT)
    assert r.status == 201, await r.text()
    _, follow = (await r.json())["delivered"]
    rooms_service.stop()

    async def away() -> bool:
        try:
            await operator.request(rooms.CONTRACT.health.published_by("test"), b"{}", timeout=1)
        except NoRespondersError:
            return True
        return False

    await eventually(away)
    held = await _timer(operator, follow["timer"])
    due = datetime.fromisoformat(held["due_at"])
    fired = scheduler.Fired(
        owner="chonk", key=follow["timer"], target="chase", due_at=due, fired_at=due,
        late_ms=0.0, payload=held["payload"],
    )  # fmt: skip
    js = operator.jetstream()
    stored = await js.publish(timer_subject("chonk", "chase"), msgspec.json.encode(fired))

    async def tried_and_failed() -> bool:
        return (await js.consumer_info(stored.stream, "chonk")).num_redelivered > 0

    await eventually(tried_and_failed)
    second_key = "chase.run_chase_ben_0908.2"
    held = await eventually(lambda: _pending(operator, second_key))
    assert datetime.fromisoformat(held["due_at"]) == ladder.due(due, 8, STOCKHOLM)
    cancel = msgspec.json.encode(scheduler.Cancel(key=second_key))  # so it never fires here
    await operator.request(scheduler.CANCEL.published_by("chonk"), cancel, timeout=5)
