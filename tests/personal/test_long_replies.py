"""A model's reply longer than a message is not lost: the agent's reply is cut to what a
message holds, and the notice before a send quotes as much of it as fits. Through the
gateway, on the running agents, rooms, ladder and scheduler services."""

import pytest

from libs.contracts.rooms import TEXT_MOST
from tests.personal.conftest import (
    Recorder,
    announce,
    eventually,
    history,
    room_with,
    say,
    set_level,
)


class Rambling(Recorder):
    """A model whose every reply is longer than a message may be."""

    async def reply(self, prompt) -> str:
        return await super().reply(prompt) + " " + "y" * TEXT_MOST


@pytest.fixture
def model() -> Recorder:
    return Rambling()


async def test_a_reply_longer_than_a_message_waits_out_its_window_cut_to_one(api, people, operator):
    """At send with a 1h window. Before, the ladder's notice (its words and the whole
    reply) was refused by the rooms, the reply's route with it, and the agents service let
    go of a refusal: no window, no notice, nothing to say the agent had answered."""
    await announce(operator, people.ada_id)
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await set_level(api, people.ada, "send")
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "How did the quarter go?", to=people.ada_id)

    async def opened() -> list[dict]:
        r = await api.get("/v1/windows", headers=people.ada)
        return (await r.json())["windows"]

    [window] = await eventually(opened)
    assert len(window["text"]) == TEXT_MOST and window["text"].endswith("…")
    [notice] = [m for m in await history(api, room, people.ada) if m.get("notice")]
    assert notice["seq"] == window["notice_seq"]
    assert len(notice["text"]) == TEXT_MOST and notice["text"].startswith("In 1h I will send")
    assert window["text"][:1000] in notice["text"]
