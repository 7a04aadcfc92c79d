"""hip-0524 §5: a person's own words take the place of their agent's send. At send with
the `instant` window there is no window to write them in, but the model takes its time: a
person who answered while their agent drafted has answered, and the agent's reply is not
sent after theirs. Before, it went out anyway, a second answer that might say the opposite.
At confirm, they were asked to confirm a reply to what they had answered already; with a
window, told by a notice of a send their answer had already taken the place of.
"""

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts.base import key_token
from services.ladder.domain.unattended import Unattended
from tests.personal.conftest import (
    announce,
    eventually,
    history,
    room_with,
    route,
    say,
    set_level,
)
from tests.personal.test_drafts_answered import Held
from tests.personal.test_hip0524_09_personal_line import sms
from tests.personal.test_line_limits import ALICE, _at_once_on_a_line


@pytest.fixture
def model(acks) -> Held:
    return Held(acks)


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
    coffee = await model.bob_asked_ada_answered(
        api, people, room, "Coffee at four?", "Can't today, sorry."
    )

    assert _replies_to(await history(api, room, people.bob), coffee["seq"]) == []
    trail = await records(operator.jetstream(), people.org)
    assert [r for r in trail if r.action == "ladder.reply.send"] == []

    # What she has not answered, her agent still answers at once.
    tea = await say(api, room, people.bob, "Tea instead?", to=people.ada_id)

    async def replied() -> list[dict]:
        return _replies_to(await history(api, room, people.bob), tea["seq"])

    [reply] = await eventually(replied)
    assert reply["automatic"] is True


async def test_with_a_window_she_is_not_told_of_a_send_she_answered_first(
    api, operator, people, model
):
    """At send with a window, her agent's notice says what it will send when the window
    ends. Answered while it drafted, there is nothing to send: no notice, no window."""
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "send")
    minute = await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    assert minute.status == 200, await minute.text()
    room = await room_with(api, people, people.bob_id)
    await model.bob_asked_ada_answered(
        api, people, room, "Drinks on Friday?", "Friday works, see you there."
    )

    assert [m for m in await history(api, room, people.ada) if m.get("notice")] == []
    listed = await (await api.get("/v1/windows", headers=people.ada)).json()
    assert [w for w in listed["windows"] + listed["closed"] if w["room"] == room["id"]] == []


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


async def test_on_a_line_the_reply_she_answered_first_leaves_the_hours_count(
    api, operator, people, model
):
    """Counted toward the line's ten unattended replies an hour as it was routed, a reply
    not sent because she answered first is taken off the count."""
    line, room = await _at_once_on_a_line(api, operator, people)

    async def texted() -> dict:
        return await (await sms(api, line, ALICE, "Saturday at ten?")).json()

    arrived = await model.answered_meanwhile(
        "Saturday at ten?", texted,
        lambda: say(api, room, people.ada, "Yes, see you then."),
    )  # fmt: skip

    assert _replies_to(await history(api, room, people.ada), arrived["seq"]) == []
    kv = await operator.jetstream().key_value("ladder")
    hour = await kv.get(f"unattended.{key_token(people.ada_id)}.{room['id']}")
    assert msgspec.json.decode(hour.value, type=Unattended).sent == {}


async def test_at_confirm_she_is_not_asked_about_what_she_answered(api, operator, people, model):
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "confirm")
    room = await room_with(api, people, people.bob_id)
    await model.bob_asked_ada_answered(api, people, room, "Dinner on Sunday?", "Sunday is perfect.")

    listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
    assert [c for c in listed["confirmations"] if c["room"] == room["id"]] == []
    assert [m for m in await history(api, room, people.ada) if m.get("question")] == []

    # Routed again once asked, a confirmation stands, whatever she said since.
    supper = await say(api, room, people.bob, "And supper on Monday?", to=people.ada_id)

    async def asked() -> list[dict]:
        found = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return [c for c in found["confirmations"] if c["reply_to"] == supper["seq"]]

    [confirmation] = await eventually(asked)
    await say(api, room, people.ada, "Let me check my week.")
    again = {"org": people.org, "person": people.ada_id, "room": room["id"],
             "reply_to": supper["seq"], "candidates": confirmation["candidates"]}  # fmt: skip
    routed = await route(operator, again)
    assert (routed["confirmation"], routed.get("answered_by")) == (confirmation["id"], None)
