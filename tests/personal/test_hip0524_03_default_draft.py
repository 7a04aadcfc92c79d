"""hip-0524 §16.3, the ladder half: the default level is draft everywhere, including for a
room or transport that did not exist when the person last looked, and for an agent fresh
from any persona."""

import pytest

from tests.personal.conftest import drafts, eventually, history, room_with, say, set_level


async def test_a_person_who_never_looked_has_draft_everywhere(api, people):
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert mine["settings"] == {"default": "draft", "transports": {}, "rooms": {}, "window": "5m"}
    assert mine["ceiling"] is None


@pytest.mark.parametrize("persona", ["self", "cto", "marketer"])
async def test_an_agent_fresh_from_any_persona_only_drafts(api, people, persona):
    made = await api.post("/v1/agents/me", json={"persona": persona}, headers=people.ada)
    assert made.status == 201, await made.text()
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Can you send the contract?", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    assert draft["agent"] == f"agent:{people.ada_id}"
    assert [m["author"] for m in await history(api, room, people.bob)] == [people.bob_id]


async def test_a_room_made_after_overrides_were_set_starts_at_the_default(api, people):
    await api.post("/v1/agents/me", json={}, headers=people.ada)
    old = await room_with(api, people, people.bob_id, title="old")
    await set_level(api, people.ada, "confirm", "room", old["id"])
    await set_level(api, people.ada, "confirm", "transport", "sms")
    new = await room_with(api, people, people.bob_id, title="new")  # did not exist before
    await say(api, new, people.bob, "New room, new question", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, new, people.ada))
    assert draft["room"] == new["id"]
