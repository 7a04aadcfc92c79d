"""Issue 11.9: `window-not-offered` for a window the type admits but the timer engine's
measured resolution does not. The ladder runs for real; what answers its question to the
scheduler is a stand-in reporting a resolution coarser than a minute."""

import msgspec
import pytest

from libs.contracts import ladder, scheduler
from libs.runtime.bus import flushed
from tests.personal.conftest import problem


@pytest.fixture
async def coarse_scheduler(operator):
    """The scheduler's resolution subject for the ladder, answered with 90 s."""

    async def answer(msg):
        reply = scheduler.Resolution(
            resolution_ms=90_000.0, p50_ms=40_000.0, p99_ms=90_000.0, max_ms=95_000.0, samples=100
        )
        await msg.respond(msgspec.json.encode(reply))

    sub = await operator.subscribe(
        scheduler.RESOLUTION.published_by("ladder"), queue="scheduler", cb=answer
    )
    await flushed(operator)
    yield
    await sub.unsubscribe()


@pytest.fixture
async def api(client_for, gateway_settings, coarse_scheduler, ladder_service):
    return await client_for(gateway_settings, services=(ladder.CONTRACT,))


async def test_a_window_shorter_than_the_resolution_is_not_offered_and_refused(api, people):
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert mine["resolution_ms"] == 90_000.0
    assert [o["window"] for o in mine["offered_windows"]] == ["instant", "5m", "15m", "1h"]
    refused = await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    assert await problem(refused) == (422, "window-not-offered")
    kept = await api.put("/v1/ladder/window", json={"window": "5m"}, headers=people.ada)
    assert (await kept.json())["settings"]["window"] == "5m"
