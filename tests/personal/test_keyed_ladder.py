"""A person's act on the ladder whose answer was lost in a failover, sent again with its
Idempotency-Key, is answered as made, not refused as already done: an edit, replacement or
stop of a pending send (the person's own text in the room once; another request finds the
window closed), and a confirmation's answer (the pick sent once)."""

import msgspec
import pytest

from libs.contracts.base import key_token
from tests.personal.conftest import confirmation_asked, history, pending_send, problem
from tests.support import (
    answered_again_after_a_failover,
    forget_idempotency_key,
    forget_kept_answers,
)

TEXT = "Yes: 4pm works for me."


async def own_messages(api, people, room) -> list[dict]:
    return [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]


@pytest.mark.parametrize(("act", "status"), [("edit", 201), ("replace", 201), ("stop", 200)])
async def test_a_keyed_act_on_a_window_run_again_is_answered_as_made(
    api, people, operator, stack, act, status
):
    room, window = await pending_send(api, people, operator)
    path, body = f"/v1/windows/{window['id']}/{act}", {} if act == "stop" else {"text": TEXT}
    keyed = people.ada | {"Idempotency-Key": f"window-{act}-1"}

    made = await answered_again_after_a_failover(
        api, path, body, keyed, service="ladder", redis_url=stack.redis_url,
        operator=operator, status=status,
    )  # fmt: skip

    assert made["state"] == {"edit": "edited", "replace": "replaced", "stop": "stopped"}[act]
    own = await own_messages(api, people, room)
    assert [m["text"] for m in own] == ([] if act == "stop" else [TEXT])
    assert made["sent_seq"] == (None if act == "stop" else own[0]["seq"])
    other = people.ada | {"Idempotency-Key": f"window-{act}-2"}
    again = await api.post(path, json=body, headers=other)
    assert await problem(again) == (409, "window-closed")


async def test_an_edit_whose_replica_died_before_it_sent_the_text_sends_it_once(
    api, people, operator, stack
):
    """The window edited, the replica gone before it noted the person's own message: the
    retry sends it under the same key, so the room has it once, and notes it."""
    room, window = await pending_send(api, people, operator)
    path, keyed = f"/v1/windows/{window['id']}/edit", people.ada | {"Idempotency-Key": "w-edit-3"}
    first = await api.post(path, json={"text": TEXT}, headers=keyed)
    assert first.status == 201, await first.text()
    kv = await operator.jetstream().key_value("ladder")
    key = f"window.{key_token(people.ada_id)}.{window['id']}"
    held = msgspec.json.decode((await kv.get(key)).value)
    held["window"]["sent_seq"] = None
    await kv.put(key, msgspec.json.encode(held))
    await forget_idempotency_key(stack.redis_url, "w-edit-3")
    await forget_kept_answers(operator, "ladder")

    again = await api.post(path, json={"text": TEXT}, headers=keyed)

    assert again.status == 201, await again.text()
    assert await again.json() == await first.json()
    assert [m["text"] for m in await own_messages(api, people, room)] == [TEXT]
    listed = await (await api.get("/v1/windows", headers=people.ada)).json()
    [closed] = [w for w in listed["closed"] if w["id"] == window["id"]]
    assert closed["sent_seq"] == (await first.json())["sent_seq"]


async def test_a_keyed_confirmation_answer_run_again_is_answered_as_made(
    api, people, operator, stack
):
    """The pick, answered in the room and sent, its answer lost: answered again with it, not
    refused as already answered, and the pick sent once."""
    room, confirmation = await confirmation_asked(api, people, operator)
    keyed = people.ada | {"Idempotency-Key": "confirm-pick-1"}
    body = {"choice": {"type": "pick", "option": 0}}

    made = await answered_again_after_a_failover(
        api, f"/v1/confirmations/{confirmation['id']}", body, keyed, service="ladder",
        redis_url=stack.redis_url, operator=operator, status=200,
    )  # fmt: skip

    sent = [m for m in await history(api, room, people.bob) if m["seq"] == made["sent_seq"]]
    assert [m["text"] for m in sent] == [confirmation["candidates"][0]]
    replies = [m for m in await history(api, room, people.bob) if m.get("reply_to") and
               m["author"] == f"agent:{people.ada_id}" and not m.get("question")]  # fmt: skip
    assert len(replies) == 1
    path = f"/v1/confirmations/{confirmation['id']}"
    again = await api.post(path, json=body, headers=people.ada)  # unkeyed: not a retry
    assert await problem(again) == (409, "already-answered")
