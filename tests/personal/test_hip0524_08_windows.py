"""hip-0524 §16.8 and §5: no offered window is shorter than the timer engine's measured
resolution, `instant` is offered saying it protects nothing, and a window's end is a timer
on the one engine, the scheduler."""

import contextlib

import msgspec
import pytest
from nats.js.errors import KeyNotFoundError

from libs.contracts.ladder import ChangeWindow
from services.ladder.domain.windows import offered
from tests.personal.conftest import eventually, pending_send


def test_windows_shorter_than_the_resolution_are_not_offered():
    assert [o.window for o in offered(5.0)] == ["instant", "1m", "5m", "15m", "1h"]
    assert [o.window for o in offered(90_000)] == ["instant", "5m", "15m", "1h"]
    assert [o.window for o in offered(3_600_000)] == ["instant"]
    [instant] = [o for o in offered(5.0) if o.window == "instant"]
    assert "nothing protects you" in instant.statement


async def test_the_person_is_offered_what_the_measured_resolution_allows(api, people):
    async def measured():  # the scheduler's own probes fire within two seconds of its start
        mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
        return mine if mine["resolution_ms"] > 0 else None

    mine = await eventually(measured)
    windows = {o["window"]: o for o in mine["offered_windows"]}
    assert set(windows) == {o.window for o in offered(mine["resolution_ms"])}
    assert windows["instant"]["seconds"] == 0
    assert "nothing protects you" in windows["instant"]["statement"]
    assert windows["1m"]["statement"].startswith("You are told first")


@pytest.mark.parametrize("window", ["30s", "2m", "0"])
async def test_a_window_not_on_the_list_is_refused(api, people, window):
    response = await api.put("/v1/ladder/window", json={"window": window}, headers=people.ada)
    assert response.status == 422
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"window": window}, ChangeWindow)


async def test_a_windows_end_is_a_timer_on_the_scheduler(api, operator, people):
    _, window = await pending_send(api, people, operator)
    kv = await operator.jetstream().key_value("scheduler-timers")

    async def timed():  # the window is held, then its end is scheduled
        with contextlib.suppress(KeyNotFoundError):
            return await kv.get(f"ladder.w.{window['id']}")

    timer = msgspec.json.decode((await eventually(timed)).value)
    assert (timer["owner"], timer["target"], timer["state"]) == ("ladder", "window_end", "pending")
    assert (
        timer["due_at"] == window["due_at"].replace("+00:00", "Z")
        or timer["due_at"] == window["due_at"]
    )
    await api.post(f"/v1/windows/{window['id']}/stop", json={}, headers=people.ada)
    timer = msgspec.json.decode((await kv.get(f"ladder.w.{window['id']}")).value)
    assert timer["state"] == "canceled"
