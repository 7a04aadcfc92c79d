"""hip-0524 §16.6, §4 and §6: a confirmation is a question in the person's own room, on a
path that carries the answer back: pick, edit or decline, each one act, answered once, by
the person asked. A question with one button cannot be made."""

import pytest

from tests.personal.conftest import problem, room_with
from tests.support import forget_idempotency_key, forget_kept_answers


@pytest.fixture
async def asked(api, people):
    """Ada's agent asks Ada which of two replies to send to Bob."""
    room = await room_with(api, people, people.bob_id)
    body = {
        "text": "Bob asks about Friday. Which reply?",
        "to": people.ada_id,
        "options": ["Friday works.", "Can we do Monday?"],
    }
    response = await api.post(
        f"/v1/rooms/{room['id']}/questions", json=body, headers=people.ada_agent
    )
    assert response.status == 201, await response.text()
    return room, await response.json()


async def _answer(api, room, question, choice, headers):
    return await api.post(
        f"/v1/rooms/{room['id']}/questions/{question['seq']}/answer",
        json={"choice": choice},
        headers=headers,
    )


async def test_the_question_is_stored_in_the_room_for_the_person(api, people, asked):
    room, question = asked
    assert question["question"] == {"options": ["Friday works.", "Can we do Monday?"]}
    assert (question["to"], question["author_kind"], question["on_behalf_of"]) == (
        people.ada_id,
        "agent",
        people.ada_id,
    )
    history = await (await api.get(f"/v1/rooms/{room['id']}/messages", headers=people.ada)).json()
    assert history["messages"] == [question]


@pytest.mark.parametrize(
    "choice, text",
    [
        ({"type": "pick", "option": 1}, "Can we do Monday?"),
        ({"type": "edit", "text": "Friday, after 3pm."}, "Friday, after 3pm."),
        ({"type": "decline"}, "Declined."),
    ],
    ids=["pick", "edit", "decline"],
)
async def test_each_answer_is_one_act_and_comes_back_in_the_room(api, people, asked, choice, text):
    room, question = asked
    response = await _answer(api, room, question, choice, people.ada)
    assert response.status == 201, await response.text()
    answer = await response.json()
    assert (answer["answers"], answer["choice"], answer["text"]) == (question["seq"], choice, text)
    assert (answer["author"], answer["author_kind"]) == (people.ada_id, "human")
    history = await (await api.get(f"/v1/rooms/{room['id']}/messages", headers=people.ada)).json()
    assert history["messages"][-1] == answer


async def test_a_question_is_answered_once(api, people, asked):
    room, question = asked
    assert (await _answer(api, room, question, {"type": "decline"}, people.ada)).status == 201
    again = await _answer(api, room, question, {"type": "pick", "option": 0}, people.ada)
    assert await problem(again) == (409, "already-answered")


@pytest.mark.parametrize("claimed", [True, False], ids=["claimed", "stored-not-claimed"])
async def test_a_keyed_answer_lost_in_a_failover_is_answered_as_it_was(
    api, people, asked, stack, operator, claimed
):
    """Its gateway and its replica kept no answer: another answer is refused, and the retry
    is answered with the answer stored, storing none; even when the replica died between
    storing the answer and claiming the question."""
    room, question = asked
    key = f"answer-friday-{claimed}"
    keyed = people.ada | {"Idempotency-Key": key}
    first = await _answer(api, room, question, {"type": "pick", "option": 0}, keyed)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, key)
    await forget_kept_answers(operator, "rooms")
    if not claimed:
        kv = await operator.jetstream().key_value("rooms")
        await kv.purge(f"answered.{room['id']}.{question['seq']}")

    other = await _answer(api, room, question, {"type": "decline"}, people.ada)
    assert await problem(other) == (409, "already-answered")
    again = await _answer(api, room, question, {"type": "pick", "option": 0}, keyed)
    assert again.status == 201, await again.text()
    assert await again.json() == await first.json()
    history = await (await api.get(f"/v1/rooms/{room['id']}/messages", headers=people.ada)).json()
    assert [m["seq"] for m in history["messages"]] == [question["seq"], (await first.json())["seq"]]


async def test_only_the_person_asked_answers_and_never_their_agent(api, people, asked):
    room, question = asked
    response = await _answer(api, room, question, {"type": "pick", "option": 0}, people.bob)
    assert await problem(response) == (404, "message-not-found")  # his to find: it is ada's alone
    response = await _answer(api, room, question, {"type": "pick", "option": 0}, people.ada_agent)
    assert await problem(response) == (403, "agent-may-not")
    response = await _answer(api, room, question, {"type": "pick", "option": 0}, people.root)
    assert await problem(response) == (404, "room-not-found")


async def test_a_bad_answer_is_refused_and_leaves_the_question_open(api, people, asked):
    room, question = asked
    for choice, rule in (
        ({"type": "pick", "option": 2}, (422, "invalid-option")),
        ({"type": "accept"}, (422, "invalid-request")),
        ({"type": "edit"}, (422, "invalid-request")),
    ):
        assert await problem(await _answer(api, room, question, choice, people.ada)) == rule
    assert (await _answer(api, room, question, {"type": "decline"}, people.ada)).status == 201


async def test_a_message_that_asks_nothing_cannot_be_answered(api, people):
    room = await room_with(api, people)
    plain = await (
        await api.post(f"/v1/rooms/{room['id']}/messages", json={"text": "hi"}, headers=people.ada)
    ).json()
    response = await _answer(api, room, plain, {"type": "decline"}, people.ada)
    assert await problem(response) == (422, "not-a-question")


async def test_a_question_with_a_single_button_cannot_be_made(api, people):
    """Decline is always offered: a question with no option to pick would be decline alone."""
    room = await room_with(api, people)
    body = {"text": "Send?", "to": people.ada_id, "options": []}
    response = await api.post(
        f"/v1/rooms/{room['id']}/questions", json=body, headers=people.ada_agent
    )
    assert await problem(response) == (422, "invalid-request")
    assert "options" in (await response.json())["detail"]


async def test_one_option_still_comes_with_decline(api, people):
    room = await room_with(api, people)
    body = {"text": "Send this?", "to": people.ada_id, "options": ["Yes, Friday."]}
    asked = await (
        await api.post(f"/v1/rooms/{room['id']}/questions", json=body, headers=people.ada_agent)
    ).json()
    declined = await _answer(api, room, asked, {"type": "decline"}, people.ada)
    assert (await declined.json())["text"] == "Declined."
