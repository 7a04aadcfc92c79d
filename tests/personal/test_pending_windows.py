"""A person's open windows, however many their agent opens, stay readable: each holds its
reply whole, and a model's reply may be as long as a message. Through the gateway, on the
running agents, rooms, ladder, scheduler, poa and mod services."""

import pytest

from tests.personal.conftest import Recorder, announce, eventually, room_with, say, set_level

REPLY = 15_000  # characters: a long reply, with room for its notice's words in a message
MESSAGES = 150  # their windows hold 2.25 MB, more than the bus carries in one answer


class Verbose(Recorder):
    """A model whose every reply is long."""

    async def reply(self, prompt) -> str:
        said = await super().reply(prompt)
        return said + " " + "y" * (REPLY - len(said) - 1)


@pytest.fixture
def model() -> Recorder:
    return Verbose()


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_busy_hour_of_windows_leaves_what_waits_readable(api, people, operator):
    """At send with a 1h window, each message said to Ada opens a window holding her
    agent's reply. She is answered the soonest, as many as the bus carries, and told more
    wait; before, her windows and so her whole pending list were a 500 until they ended."""
    await announce(operator, people.ada_id)
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await set_level(api, people.ada, "send")
    room = await room_with(api, people, people.bob_id)
    for i in range(MESSAGES):
        await say(api, room, people.bob, f"question {i}?", to=people.ada_id)

    async def opened() -> bool:
        r = await api.get("/v1/windows", headers=people.ada)
        return r.status == 500 or (r.status == 200 and (await r.json()).get("more", False))

    await eventually(opened, timeout=120)
    listed = await api.get("/v1/windows", headers=people.ada)
    assert listed.status == 200, await listed.text()
    windows = (await listed.json())["windows"]
    assert 0 < len(windows) < MESSAGES
    assert [w["due_at"] for w in windows] == sorted(w["due_at"] for w in windows)
    everything = await api.get("/v1/pending", headers=people.ada)
    assert everything.status == 200, await everything.text()
    waiting = await everything.json()
    assert [i["kind"] for i in waiting["items"]] == ["window"] * len(windows)
    assert waiting["more"] is True
