"""A person's edit of a pending send, answered 503 because the rooms were away, is made
when they ask again. The edit took the window over (the agent's send canceled) and then
could not send their text; asked again, as a 503 says to, the window was closed (409), so
neither their text nor their agent's ever went."""

import pytest

from tests.personal.conftest import SERVED, announce, eventually, room_with, say, set_level

STATE = {"edit": "edited", "replace": "replaced"}


@pytest.fixture
async def api(client_for, gateway_settings, agents_service, ladder_service, scheduler_service):
    """Everything but the rooms, which each test brings up and down (`rooms_up`)."""
    return await client_for(gateway_settings, services=SERVED)


@pytest.mark.parametrize("act", ["edit", "replace"])
async def test_a_take_over_the_rooms_could_not_carry_is_made_when_asked_again(
    api, operator, people, rooms_up, act
):
    async with rooms_up():
        await announce(operator, people.ada_id)
        await eventually(lambda: _ok(api.get("/v1/agents/me", headers=people.ada)))
        await set_level(api, people.ada, "send")
        await api.put("/v1/ladder/window", json={"window": "15m"}, headers=people.ada)
        room = await room_with(api, people, people.bob_id)
        await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)
        [window] = await eventually(lambda: _windows(api, people))
    path, text = f"/v1/windows/{window['id']}/{act}", {"text": "Friday, I'm afraid."}
    first = await api.post(path, json=text, headers=people.ada)
    assert first.status == 503, await first.text()
    async with rooms_up():

        async def again() -> dict | None:
            response = await api.post(path, json=text, headers=people.ada)
            return await response.json() if response.status != 503 else None

        made = await eventually(again, timeout=20)
        assert (made["state"], made["sent_seq"] is not None) == (STATE[act], True), made
        history = await api.get(f"/v1/rooms/{room['id']}/messages", headers=people.bob)
        messages = (await history.json())["messages"]
    said = [(m["author"], m["text"]) for m in messages if m["author"] != people.bob_id]
    assert said == [(people.ada_id, text["text"])]  # hers, once, and none of her agent's


async def _ok(request) -> bool:
    return (await request).status == 200


async def _windows(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]
