"""hip-0524 §5: during a window the person may replace their agent's send. Writing their
own answer in the room is that: at the window's end the send is `replaced` by their words,
recorded as their act, and nothing more leaves. Before, the agent's reply went out after
the person's own, a second answer that might say the opposite. In a room of more than two
people only a reply to the same message counts, since anything else they say there may be
to someone else."""

import pytest

from libs.audit.reading import records
from tests.personal.conftest import announce, behind, eventually, history, room_with, say
from tests.personal.test_hip0524_07_lowering import _open_window
from tests.support import bearer, token


@pytest.fixture
def ladder_clock():
    return behind(50)  # a one-minute window ends ten real seconds after it opens


async def _closed(api, people, window: dict) -> dict | None:
    """The window once settled (neither open nor on its way)."""
    listed = await (await api.get("/v1/windows", headers=people.ada)).json()
    settled = (w for w in listed["closed"] if w["state"] != "sending")
    return next((w for w in settled if w["id"] == window["id"]), None)


def _agents_said(messages: list[dict]) -> list[str]:
    return [m["text"] for m in messages if m["author_kind"] == "agent" and not m.get("notice")]


async def test_the_persons_own_answer_in_the_room_replaces_the_agents_send(api, operator, people):
    room, window = await _open_window(api, operator, people)
    mine = await say(api, room, people.ada, "Not today, sorry: Friday?")
    closed = await eventually(lambda: _closed(api, people, window), timeout=30)
    assert (closed["state"], closed["sent_seq"]) == ("replaced", mine["seq"])
    assert _agents_said(await history(api, room, people.bob)) == []
    (replaced,) = [
        r for r in await records(operator.jetstream(), people.org)
        if r.action == "ladder.window.replaced" and r.target == window["id"]
    ]  # fmt: skip
    assert (replaced.actor.sub, replaced.actor.act) == (people.ada_id, None)


async def test_in_a_room_of_three_only_a_reply_to_the_same_message_replaces_it(
    api, operator, people
):
    cy_id = f"{people.org}/cy"
    await announce(operator, cy_id)
    room = await room_with(api, people, people.bob_id, cy_id, title="three")
    _, window = await _open_window(api, operator, people, room)
    await say(api, room, people.ada, "Cy, the numbers are in.", to=cy_id)
    closed = await eventually(lambda: _closed(api, people, window), timeout=30)
    assert closed["state"] == "sent"
    cy = bearer(token(org=people.org, user=cy_id))
    assert len(_agents_said(await history(api, room, cy))) == 1

    asked = await say(api, room, people.bob, "And the deck?", to=people.ada_id)
    [second] = await eventually(lambda: _open(api, people), timeout=30)
    await say(api, room, people.ada, "Sending it now.", reply_to=asked["seq"])
    closed = await eventually(lambda: _closed(api, people, second), timeout=30)
    assert closed["state"] == "replaced"


async def _open(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]
