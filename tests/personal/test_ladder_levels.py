"""One reply at each level, through the running services (hip-0524 §4, §5, §6, §11)."""

import msgspec
import pytest

from libs.contracts.streams import timer_subject
from tests.personal.conftest import (
    announce,
    behind,
    drafts,
    eventually,
    history,
    problem,
    room_with,
    say,
    set_level,
)
from tests.personal.test_hip0524_07_lowering import _timer
from tests.personal.test_hip0524_09_personal_line import connect, sms


@pytest.fixture
def ladder_clock():
    return behind(57)  # a one-minute window ends three real seconds after it opens


@pytest.fixture
async def room(api, operator, people):
    await announce(operator, people.ada_id)
    assert await eventually(lambda: _ok(api.get("/v1/agents/me", headers=people.ada)))
    return await room_with(api, people, people.bob_id)


async def _ok(request) -> bool:
    return (await request).status == 200


async def _questions(api, room, people) -> list[dict]:
    return [m for m in await history(api, room, people.ada) if m.get("question")]


async def test_at_draft_the_reply_waits_for_the_person_and_nothing_leaves(api, people, room):
    await say(api, room, people.bob, "Lunch?", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    assert draft["state"] == "open"
    assert [m["author"] for m in await history(api, room, people.ada)] == [people.bob_id]


async def test_at_confirm_the_person_is_asked_in_their_room_and_the_pick_leaves(api, people, room):
    await set_level(api, people.ada, "confirm")
    asked = await say(api, room, people.bob, "Lunch on Friday?", to=people.ada_id)
    [question] = await eventually(lambda: _questions(api, room, people))
    assert (question["author"], question["on_behalf_of"], question["to"]) == (
        f"agent:{people.ada_id}",
        people.ada_id,
        people.ada_id,
    )
    assert question["reply_to"] == asked["seq"]
    answer = {"choice": {"type": "pick", "option": 0}}
    path = f"/v1/rooms/{room['id']}/questions/{question['seq']}/answer"
    assert (await api.post(path, json=answer, headers=people.ada)).status == 201

    async def sent():
        found = [
            m
            for m in await history(api, room, people.bob)
            if m["author_kind"] == "agent" and not m.get("question")
        ]
        return found

    [reply] = await eventually(sent)
    assert (reply["text"], reply["author"], reply["on_behalf_of"], reply["to"]) == (
        question["question"]["options"][0],
        f"agent:{people.ada_id}",
        people.ada_id,
        people.bob_id,
    )
    assert await drafts(api, room, people.ada) == []


async def test_at_confirm_a_decline_sends_nothing(api, people, room):
    await set_level(api, people.ada, "confirm")
    await say(api, room, people.bob, "Can you cover my shift?", to=people.ada_id)
    [question] = await eventually(lambda: _questions(api, room, people))
    ladder = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert ladder["settings"]["default"] == "confirm"
    confirmation_id = await _confirmation_id(api, people, room, question)
    response = await api.post(
        f"/v1/confirmations/{confirmation_id}",
        json={"choice": {"type": "decline"}},
        headers=people.ada,
    )
    assert response.status == 200, await response.text()
    assert "sent_seq" not in await response.json()  # carried out before it answered: nothing
    mine = [(m["author_kind"], m["text"]) for m in await history(api, room, people.ada)]
    assert mine[-1] == ("human", "Declined.")  # the answer is ada's alone, like the question
    bobs = [(m["author_kind"], m["text"]) for m in await history(api, room, people.bob)]
    assert bobs == [("human", "Can you cover my shift?")]


async def test_at_confirm_an_edit_leaves_as_the_persons_own_words(api, people, room):
    await set_level(api, people.ada, "confirm")
    await say(api, room, people.bob, "Ship it today?", to=people.ada_id)
    [question] = await eventually(lambda: _questions(api, room, people))
    confirmation_id = await _confirmation_id(api, people, room, question)
    edit = {"choice": {"type": "edit", "text": "Tomorrow, after the review."}}
    routed = await (
        await api.post(f"/v1/confirmations/{confirmation_id}", json=edit, headers=people.ada)
    ).json()
    sent = [m for m in await history(api, room, people.bob) if m["seq"] == routed["sent_seq"]]
    assert [(m["author"], m["author_kind"], m["drafted_by"], m["text"]) for m in sent] == [
        (people.ada_id, "human", f"agent:{people.ada_id}", "Tomorrow, after the review.")
    ]
    again = await api.post(
        f"/v1/confirmations/{confirmation_id}",
        json={"choice": {"type": "decline"}},
        headers=people.ada,
    )
    assert await problem(again) == (409, "already-answered")


async def test_at_send_the_person_is_told_first_then_silence_sends_it(api, people, room):
    await set_level(api, people.ada, "send")
    await _window(api, people, "1m")
    asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)
    [window] = await eventually(lambda: _windows(api, people))
    assert 0 < window["seconds_left"] <= 60 and window["state"] == "open"
    [notice] = [m for m in await history(api, room, people.ada) if m.get("notice")]
    assert notice["seq"] == window["notice_seq"] and notice["seq"] > asked["seq"]
    assert window["text"] in notice["text"] and "1m" in notice["text"]

    async def sent():
        return [
            m
            for m in await history(api, room, people.bob)
            if m["author_kind"] == "agent" and not m.get("notice")
        ]

    [reply] = await eventually(sent, timeout=15)
    assert (reply["text"], reply["on_behalf_of"], reply["reply_to"]) == (
        window["text"],
        people.ada_id,
        asked["seq"],
    )
    assert reply["seq"] > notice["seq"]  # both kept, the notice first
    assert await _windows(api, people) == []


@pytest.mark.parametrize("act", ["edit", "replace", "stop"])
async def test_during_the_window_edit_replace_or_stop_cancels_the_agents_send(
    api, people, room, act, operator
):
    await set_level(api, people.ada, "send")
    await _window(api, people, "1m")
    await say(api, room, people.bob, "Can we move the call?", to=people.ada_id)
    [window] = await eventually(lambda: _windows(api, people))
    body = {} if act == "stop" else {"text": "Yes: 4pm works for me."}
    response = await api.post(f"/v1/windows/{window['id']}/{act}", json=body, headers=people.ada)
    assert response.status in (200, 201), await response.text()
    closed = await response.json()
    assert closed["state"] == {"edit": "edited", "replace": "replaced", "stop": "stopped"}[act]
    timer = await _timer(operator, window["id"])  # canceled before the act answered
    assert timer["state"] == "canceled"
    after = await history(api, room, people.bob)
    assert not [m for m in after if m["author_kind"] == "agent" and not m.get("notice")]
    own = [m for m in after if m["author"] == people.ada_id]
    if act == "stop":
        assert own == []
    else:
        [mine] = own
        assert (mine["text"], mine["author_kind"], mine.get("drafted_by")) == (
            "Yes: 4pm works for me.",
            "human",
            f"agent:{people.ada_id}" if act == "edit" else None,
        )
    again = await api.post(f"/v1/windows/{window['id']}/stop", json={}, headers=people.ada)
    if act == "stop":  # the same request again, answered as made
        assert (again.status, await again.json()) == (200, closed)
    else:
        assert await problem(again) == (409, "window-closed")


async def test_a_retried_fire_never_sends_twice(api, people, room, operator, acks):
    await set_level(api, people.ada, "send")
    await _window(api, people, "1m")
    await say(api, room, people.bob, "Numbers?", to=people.ada_id)
    [window] = await eventually(lambda: _windows(api, people))

    async def sent():
        return [
            m
            for m in await history(api, room, people.bob)
            if m["author_kind"] == "agent" and not m.get("notice")
        ]

    assert len(await eventually(sent, timeout=15)) == 1
    js = operator.jetstream()
    fired = await js.get_last_msg("TIMERS", timer_subject("ladder", "window_end"))
    for i in range(3):  # the same fire, delivered again as if after a crash
        await js.publish(fired.subject, fired.data, headers={"Nats-Msg-Id": f"again-{i}"})
    await acks.caught_up("TIMERS", "ladder")
    assert len(await sent()) == 1
    assert msgspec.json.decode(fired.data)["payload"]["id"] == window["id"]


async def test_a_first_contact_is_never_automatic_even_at_send(api, people, room, operator):
    """A line's first message from a stranger is asked, not sent, at send."""
    await set_level(api, people.ada, "send")
    line = await connect(api, operator, people)
    delivered = await (await sms(api, line, "+14155550111", "Who is this?")).json()
    line_room = {"id": delivered["room"]}
    [question] = await eventually(lambda: _questions(api, line_room, people))
    assert question["to"] == people.ada_id
    assert await _windows(api, people) == []


async def _window(api, people, window: str) -> None:
    response = await api.put("/v1/ladder/window", json={"window": window}, headers=people.ada)
    assert response.status == 200, await response.text()


async def _windows(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]


async def _confirmation_id(api, people, room, question) -> str:
    listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
    [found] = [c for c in listed["confirmations"] if c["question_seq"] == question["seq"]]
    assert (found["room"], found["candidates"]) == (room["id"], question["question"]["options"])
    assert found["actions"] == ["pick", "edit", "decline"]  # issue 14.6: decline is listed
    return found["id"]
