"""A window whose end passed before it could be timed ends then, late, and its send goes.
The scheduler away (a rollout, say) when a window opened: its notice was delivered and the
window held, but the timer could not be set, so the agent's reply was routed again later.
By then the end had passed, the scheduler refused a due time in the past, and the route
was dropped as refused: the window stayed open for good and its send never went."""

from datetime import UTC, datetime

import pytest

from tests.personal.conftest import announce, behind, eventually, history, room_with, say, set_level


@pytest.fixture
def ladder_clock():
    """A one-minute window ends three real seconds after it opens."""
    return behind(57)


@pytest.fixture
async def scheduler_service():
    """Away unless a test brings it up (`scheduler_up`)."""
    yield None


async def test_a_window_timed_after_its_end_ends_then_and_its_send_goes(
    api, operator, people, scheduler_up
):
    async with scheduler_up():  # the windows offered are the scheduler's to say
        await announce(operator, people.ada_id)
        await eventually(lambda: _ok(api.get("/v1/agents/me", headers=people.ada)))
        await set_level(api, people.ada, "send")
        chosen = await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
        assert chosen.status == 200, await chosen.text()
    room = await room_with(api, people, people.bob_id)
    asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)

    async def held() -> list[dict]:
        return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]

    [window] = await eventually(held)  # notice given, window held, its timer not set
    due = datetime.fromisoformat(window["due_at"])

    async def ended() -> bool:
        return datetime.now(UTC) > due

    await eventually(ended)
    async with scheduler_up():  # back, with the window's end behind it

        async def sent() -> list[dict]:
            found = await history(api, room, people.bob)
            return [m for m in found if m.get("reply_to") == asked["seq"]]

        [reply] = await eventually(sent, timeout=30)
    assert reply["author"] == f"agent:{people.ada_id}" and reply["automatic"]
    closed = (await (await api.get("/v1/windows", headers=people.ada)).json())["closed"]
    assert [(w["id"], w["state"]) for w in closed] == [(window["id"], "sent")]


async def _ok(response) -> bool:
    return (await response).status == 200
