"""A person's edit of a pending send, answered 503 because the rooms were away, is made
when they ask again. The edit took the window over (the agent's send canceled) and then
could not send their text; asked again, as a 503 says to, the window was closed (409), so
neither their text nor their agent's ever went."""

import pytest

from tests.personal.conftest import SERVED, eventually, pending_send

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
        room, window = await pending_send(api, people, operator)
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
