"""Issue 15: a message, a question or a room whose answer was lost in a failover, sent again
with its Idempotency-Key, is answered as it was and made once: from the answer the runtime
kept, or, when the replica died before it kept one, because each is made under the key. The
same key sent with another request is refused, never answered with the first's outcome."""

import pytest

from tests.personal.conftest import history, room_with
from tests.support import answered_again_after_a_failover, forget_idempotency_key, kept_answers


async def sent_and_forgotten(api, people, stack, key: str) -> tuple[dict, dict, dict]:
    """Ada says hello in a room with Bob with `key`, and her gateway is killed before it
    kept the answer: the room, the message, and what the retry is sent with."""
    room = await room_with(api, people, people.bob_id)
    path, keyed = f"/v1/rooms/{room['id']}/messages", people.ada | {"Idempotency-Key": key}
    first = await api.post(path, json={"text": "hello"}, headers=keyed)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, key)
    return room, await first.json(), {"json": {"text": "hello"}, "headers": keyed}


async def test_a_keyed_message_run_again_is_stored_once(api, people, stack):
    room, message, retry = await sent_and_forgotten(api, people, stack, "hello-1")

    again = await api.post(f"/v1/rooms/{room['id']}/messages", **retry)
    assert again.status == 201, await again.text()
    assert await again.json() == message

    assert [m["text"] for m in await history(api, room, people.bob)] == ["hello"]


async def test_a_keyed_message_is_kept_for_the_day_its_key_lasts(api, people, operator):
    """The stream knows a message's key for an hour only; the answer the runtime keeps in
    `replies` answers a retry for the day the gateway promises."""
    room = await room_with(api, people, people.bob_id)
    kept = await kept_answers(operator, "rooms")
    keyed = people.ada | {"Idempotency-Key": "kept-a-day"}
    sent = await api.post(f"/v1/rooms/{room['id']}/messages", json={"text": "hi"}, headers=keyed)
    assert sent.status == 201, await sent.text()
    assert len(await kept_answers(operator, "rooms") - kept) == 1


async def test_a_key_its_gateway_forgot_used_for_another_message_is_refused(api, people, stack):
    """Not answered with a message that was never stored (the first's seq, the new text)."""
    room, _, retry = await sent_and_forgotten(api, people, stack, "hello-2")

    retry["json"] = {"text": "goodbye"}
    other = await api.post(f"/v1/rooms/{room['id']}/messages", **retry)
    assert (other.status, (await other.json())["type"]) == (
        422,
        "urn:tether:problem:idempotency-key-reused",
    )
    assert [m["text"] for m in await history(api, room, people.bob)] == ["hello"]


async def test_a_keyed_room_made_again_is_made_once(api, people, stack):
    keyed = people.ada | {"Idempotency-Key": "team-room-1"}
    body = {"title": "team", "members": [people.bob_id]}

    first = await api.post("/v1/rooms", json=body, headers=keyed)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, "team-room-1")
    again = await api.post("/v1/rooms", json=body, headers=keyed)
    assert again.status == 201, await again.text()
    assert await again.json() == await first.json()
    # Where the room is read, said by the answer and by its replay alike.
    where = f"/v1/rooms/{(await first.json())['id']}"
    assert first.headers["Location"] == again.headers["Location"] == where
    assert await (await api.get(where, headers=people.bob)).json() == await first.json()

    listed = await api.get("/v1/rooms", headers=people.bob)
    assert [r["id"] for r in (await listed.json())["rooms"]] == [(await first.json())["id"]]


async def test_a_key_its_gateway_forgot_used_for_another_room_is_refused(api, people, stack):
    keyed = people.ada | {"Idempotency-Key": "team-room-2"}

    first = await api.post(
        "/v1/rooms", json={"title": "team", "members": [people.bob_id]}, headers=keyed
    )
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, "team-room-2")
    other = await api.post("/v1/rooms", json={"title": "other", "members": []}, headers=keyed)
    assert (other.status, (await other.json())["type"]) == (
        422,
        "urn:tether:problem:idempotency-key-reused",
    )

    listed = await api.get("/v1/rooms", headers=people.ada)
    assert [r["title"] for r in (await listed.json())["rooms"]] == ["team"]


async def asked_and_forgotten(api, people, stack, key: str) -> tuple[dict, dict, dict]:
    """Ada's agent asks her a question with `key`, and its gateway is killed before it
    kept the answer: the room, the question, and what the retry is sent with."""
    room = await room_with(api, people, people.bob_id)
    body = {"text": "Friday?", "to": people.ada_id, "options": ["yes", "no"]}
    keyed = people.ada_agent | {"Idempotency-Key": key}
    first = await api.post(f"/v1/rooms/{room['id']}/questions", json=body, headers=keyed)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, key)
    return room, await first.json(), {"json": body, "headers": keyed}


async def test_a_keyed_question_asked_again_is_asked_once(api, people, stack):
    room, question, retry = await asked_and_forgotten(api, people, stack, "ask-friday-1")

    again = await api.post(f"/v1/rooms/{room['id']}/questions", **retry)
    assert again.status == 201, await again.text()
    assert await again.json() == question
    assert [m["text"] for m in await history(api, room, people.ada)] == ["Friday?"]


async def test_a_key_its_gateway_forgot_used_for_another_request_is_refused(api, people, stack):
    room, _, retry = await asked_and_forgotten(api, people, stack, "ask-friday-2")

    retry["json"] = retry["json"] | {"text": "Monday?"}
    other = await api.post(f"/v1/rooms/{room['id']}/questions", **retry)
    assert (other.status, (await other.json())["type"]) == (
        422,
        "urn:tether:problem:idempotency-key-reused",
    )
    assert [m["text"] for m in await history(api, room, people.ada)] == ["Friday?"]


@pytest.mark.parametrize(
    ("path", "who", "body"),
    [
        ("messages", "ada", {"text": "hello"}),
        ("questions", "ada_agent", {"text": "Friday?", "options": ["yes", "no"]}),
    ],
    ids=["message", "question"],
)
async def test_a_keyed_post_whose_replica_kept_no_answer_is_stored_once(
    api, people, stack, operator, path, who, body
):
    """Ada says hello to Bob; her agent asks her a question."""
    room = await room_with(api, people, people.bob_id)
    body = body | ({"to": people.ada_id} if path == "questions" else {})
    keyed = getattr(people, who) | {"Idempotency-Key": f"kept-none-{path}"}
    await answered_again_after_a_failover(
        api, f"/v1/rooms/{room['id']}/{path}", body, keyed,
        service="rooms", redis_url=stack.redis_url, operator=operator,
    )  # fmt: skip
    assert [m["text"] for m in await history(api, room, people.ada)] == [body["text"]]


async def test_a_keyed_room_whose_replica_kept_no_answer_is_made_once(api, people, stack, operator):
    keyed = people.ada | {"Idempotency-Key": "kept-none-room"}
    body = {"title": "team", "members": [people.bob_id]}
    room = await answered_again_after_a_failover(
        api, "/v1/rooms", body, keyed, service="rooms", redis_url=stack.redis_url, operator=operator
    )
    listed = await api.get("/v1/rooms", headers=people.bob)
    assert [r["id"] for r in (await listed.json())["rooms"]] == [room["id"]]
