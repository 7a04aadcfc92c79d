"""hip-0524 §5: a person's own words take the place of their agent's send. At send with
the `instant` window there is no window to write them in, but the model takes its time: a
person who answered while their agent drafted has answered, and the agent's reply is not
sent after theirs. Before, it went out anyway, a second answer that might say the opposite.
"""

import asyncio

import pytest

from libs.audit.reading import records
from tests.personal.conftest import (
    announce,
    consumed,
    eventually,
    history,
    room_with,
    route,
    say,
    set_level,
)
from tests.personal.test_drafts_answered import Held


@pytest.fixture
def model() -> Held:
    return Held()


async def _at_once(api, operator, people) -> dict:
    """Ada at send with no window, in a room with Bob."""
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "send")
    instant = await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    assert instant.status == 200, await instant.text()
    return await room_with(api, people, people.bob_id)


def _replies_to(messages: list[dict], seq: int) -> list[dict]:
    return [m for m in messages if m["author_kind"] == "agent" and m.get("reply_to") == seq]


async def test_her_answer_while_her_agent_drafted_is_the_only_one(api, operator, people, model):
    room = await _at_once(api, operator, people)
    model.hold = "Coffee at four?"
    coffee = await say(api, room, people.bob, "Coffee at four?", to=people.ada_id)
    await asyncio.wait_for(model.asked.wait(), 10)
    await say(api, room, people.ada, "Can't today, sorry.")
    model.released.set()
    await consumed(operator, "EVENTS", "agents")  # her agent's reply routed, and settled

    assert _replies_to(await history(api, room, people.bob), coffee["seq"]) == []
    trail = await records(operator.jetstream(), people.org)
    assert [r for r in trail if r.action == "ladder.reply.send"] == []

    # What she has not answered, her agent still answers at once.
    tea = await say(api, room, people.bob, "Tea instead?", to=people.ada_id)

    async def replied() -> list[dict]:
        return _replies_to(await history(api, room, people.bob), tea["seq"])

    [reply] = await eventually(replied)
    assert reply["automatic"] is True


async def test_a_send_routed_again_after_she_answered_her_agent_stands(api, operator, people):
    """Her words after her agent's reply answer the agent: the reply routed again (its
    reader delivered the message again) is the send already made, not one she replaced."""
    room = await _at_once(api, operator, people)
    lunch = await say(api, room, people.bob, "Lunch on Friday?", to=people.ada_id)

    async def replied() -> list[dict]:
        return _replies_to(await history(api, room, people.ada), lunch["seq"])

    [reply] = await eventually(replied)
    await say(api, room, people.ada, "And I'll bring the cake.")
    again = {"org": people.org, "person": people.ada_id, "room": room["id"],
             "reply_to": lunch["seq"], "candidates": [reply["text"]]}  # fmt: skip
    routed = await route(operator, again)
    assert (routed["sent_seq"], routed.get("answered_by")) == (reply["seq"], None)
