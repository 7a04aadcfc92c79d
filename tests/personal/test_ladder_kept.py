"""What the ladder has settled is kept for a while and then removed by the server: a
stopped window, listed among the closed within its keep, and an answered confirmation
with the question that asked it. Nothing older of theirs is read again once they are gone
(a window's history is rolled up as it settles), and a window's entry in its org's open
index leaves only a marker that expires in turn. Kept here for two seconds, not a week:
before this, each stayed forever, and a person's pending list read every window they
ever had."""

import pytest

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.rooms import MESSAGE_STORED, MessageStored
from libs.runtime.leader import newest_seq
from tests.personal.conftest import (
    confirmation_asked,
    eventually,
    pending_send,
    problem,
)

STREAM = "KV_ladder"


@pytest.fixture
def settled_kept() -> int:
    """TETHER_SETTLED_KEPT, as the services read it."""
    return 2


async def _messages_on(js, key: str) -> int:
    info = await js.stream_info(STREAM, subjects_filter=f"$KV.ladder.{key}")
    return sum((info.state.subjects or {}).values())


async def _gone(js, *keys: str) -> bool:
    return all([await newest_seq(js, STREAM, f"$KV.ladder.{key}") == 0 for key in keys])


async def test_a_stopped_window_is_listed_closed_then_nothing_of_it_is_stored(
    api, people, operator
):
    js = operator.jetstream()
    _, window = await pending_send(api, people, operator)
    window_key = f"window.{key_token(people.ada_id)}.{window['id']}"
    open_key = f"open.{people.org}.{key_token(people.ada_id)}.{window['id']}"
    assert await _messages_on(js, window_key) == 1 and await _messages_on(js, open_key) == 1

    stopped = await api.post(f"/v1/windows/{window['id']}/stop", json={}, headers=people.ada)
    assert stopped.status == 200, await stopped.text()

    listed = await (await api.get("/v1/windows", headers=people.ada)).json()
    assert [(w["id"], w["state"]) for w in listed["closed"]] == [(window["id"], "stopped")]
    # The open window's message and the stopped one were one key's history: rolled up.
    assert await _messages_on(js, window_key) == 1
    marker = await js.get_last_msg(STREAM, f"$KV.ladder.{open_key}")
    assert (marker.headers or {}).get("KV-Operation") == "PURGE"
    assert (marker.headers or {}).get("Nats-TTL") == "3600s"
    assert await _messages_on(js, open_key) == 1

    async def forgotten() -> bool:
        listed = await (await api.get("/v1/windows", headers=people.ada)).json()
        return listed == {"windows": [], "closed": [], "more": False} and await _gone(
            js, window_key
        )

    await eventually(forgotten, timeout=30)
    again = await api.post(f"/v1/windows/{window['id']}/stop", json={}, headers=people.ada)
    assert await problem(again) == (404, "window-not-found")


async def test_an_answered_confirmation_and_its_question_are_kept_then_gone(api, people, operator):
    js = operator.jetstream()
    room, confirmation = await confirmation_asked(api, people, operator)
    confirm_key = f"confirm.{key_token(people.ada_id)}.{confirmation['id']}"
    asked_key = f"asked.{room['id']}.{confirmation['question_seq']}"
    path = f"/v1/confirmations/{confirmation['id']}"
    body = {"choice": {"type": "pick", "option": 0}}
    answered = await api.post(path, json=body, headers=people.ada)
    assert answered.status == 200, await answered.text()
    assert await problem(await api.post(path, json=body, headers=people.ada)) == (
        409,
        "already-answered",
    )

    await eventually(lambda: _gone(js, confirm_key, asked_key), timeout=30)
    again = await api.post(path, json=body, headers=people.ada)
    assert await problem(again) == (404, "confirmation-not-found")


async def test_a_message_delivered_again_once_its_question_is_answered_leaves_it_kept(
    api, people, operator, acks
):
    """The agents service reads the message again (its replica died before acknowledging
    it) after Ada answered: the reply is routed again, as it was, and finds its
    confirmation asked. Its question's key keeps its keep; before, it was written again
    without one and stayed for good."""
    js = operator.jetstream()
    room, confirmation = await confirmation_asked(api, people, operator)
    asked_key = f"asked.{room['id']}.{confirmation['question_seq']}"
    path = f"/v1/confirmations/{confirmation['id']}"
    answered = await api.post(path, json={"choice": {"type": "decline"}}, headers=people.ada)
    assert answered.status == 200, await answered.text()

    again = MessageStored(
        org=people.org, room=room["id"], seq=confirmation["reply_to"], author_kind="human",
        to=people.ada_id, answerer=f"agent:{people.ada_id}", first_contact=False,
    )  # fmt: skip
    await js.publish(MESSAGE_STORED.name, codec.encode(again))
    await acks.caught_up("EVENTS", "agents")
    await eventually(lambda: _gone(js, asked_key), timeout=30)
