"""Issue 11.1: a transient failure downstream is tried again, never taken as a refusal.

rooms is stopped across a window's end. Brought back in time, the agent's message leaves
exactly once; kept down past every retry, the window says `failed` to its person, the fire
is parked as a dead letter, and nothing was sent."""

import pytest

from libs.audit.reading import records as audit_records
from libs.contracts import ladder
from libs.contracts.streams import DEAD
from libs.runtime.consumer import Retry
from services.ladder.main import serve as serve_ladder
from tests.personal.conftest import (
    SERVED,
    announce,
    behind,
    eventually,
    room_with,
    say,
    set_level,
)
from tests.support import serving

FAST = Retry(first_s=0.2, most_s=0.5, attempts=4)


@pytest.fixture
async def ladder_service(settings_for, audit_service):
    """A one-minute window ends three real seconds after it opens; retries are quick."""
    clock = behind(57)
    async with serving(
        ladder.CONTRACT, settings_for("ladder"), lambda svc: serve_ladder(svc, clock, retry=FAST)
    ) as svc:
        yield svc


@pytest.fixture
async def api(client_for, gateway_settings, agents_service, ladder_service, scheduler_service):
    return await client_for(gateway_settings, services=SERVED)


async def _window_at_send(api, operator, people, rooms_up):
    """Ada at send with a 1m window; bob writes to her; her agent's window opens."""
    async with rooms_up():
        await announce(operator, people.ada_id)
        await eventually(lambda: _ok(api.get("/v1/agents/me", headers=people.ada)))
        await set_level(api, people.ada, "send")
        await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
        room = await room_with(api, people, people.bob_id)
        asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)
        [window] = await eventually(lambda: _windows(api, people))
    return room, asked, window


async def test_rooms_down_across_a_windows_end_then_back_the_message_leaves_once(
    api, operator, people, rooms_up, acks
):
    room, asked, window = await _window_at_send(api, operator, people, rooms_up)
    # rooms is down now; the window ends and is tried (its end asks the rooms whether Ada
    # answered herself, then sends), and handed back to be tried again
    await acks.handed_back("TIMERS", "ladder", timeout=15)
    async with rooms_up():

        async def sent():
            return [m for m in await _bobs(api, room, people) or [] if m["author_kind"] == "agent"]

        [message] = await eventually(sent, timeout=15)
        assert await eventually(lambda: _state(api, people, window["id"], "sent"))
        assert (message["text"], message["reply_to"]) == (window["text"], asked["seq"])
        assert message["automatic"] is True  # sent at its window's end, with no one asked
        assert len(await sent()) == 1


async def test_rooms_down_past_every_retry_fails_the_window_and_parks_the_fire(
    api, operator, people, rooms_up
):
    room, _, window = await _window_at_send(api, operator, people, rooms_up)
    failed = await eventually(lambda: _state(api, people, window["id"], "failed"), timeout=30)
    assert failed["text"] == window["text"]
    js = operator.jetstream()
    dead = await js.get_last_msg(DEAD.name, "tether.dead.ladder.ladder")
    assert window["id"] in dead.data.decode()
    assert dead.headers["Tether-Dead-Stream"] == "TIMERS"
    async with rooms_up():
        bobs = await eventually(lambda: _bobs(api, room, people))
    assert [m for m in bobs if m["author_kind"] == "agent"] == []
    records = await audit_records(js, people.org)  # the failure is on the org's trail
    assert [r.target for r in records if r.action == "ladder.window.failed"] == [window["id"]]
    parked = f"TIMERS:{dead.headers['Tether-Dead-Seq']}"  # and the dead letter on the system's
    system = await audit_records(js, "tether")
    assert [r.action for r in system if r.target == parked] == ["reader.dead_letter"]


async def _bobs(api, room: dict, people) -> list[dict] | None:
    """Bob's history, once the rooms just started again answers (until then, a 503: a
    transient failure, asked again)."""
    response = await api.get(f"/v1/rooms/{room['id']}/messages", headers=people.bob)
    return (await response.json())["messages"] if response.status == 200 else None


async def _ok(request) -> bool:
    return (await request).status == 200


async def _windows(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]


async def _state(api, people, window_id: str, state: str) -> dict | None:
    listed = await (await api.get("/v1/windows", headers=people.ada)).json()
    found = [w for w in listed["closed"] if w["id"] == window_id and w["state"] == state]
    return found[0] if found else None
