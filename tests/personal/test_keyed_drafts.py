"""A person's send or discard of their agent's draft whose answer was lost in a failover, sent
again with its Idempotency-Key, is answered as made, not refused as closed; the draft is sent
once. An unkeyed request finds the draft closed."""

import pytest

from tests.personal.conftest import announce, drafts, eventually, history, problem, room_with, say
from tests.support import answered_again_after_a_failover


async def a_draft(api, people, operator) -> tuple[dict, dict]:
    """Bob asks Ada; at draft, her agent's reply waits for her."""
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Lunch?", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    return room, draft


@pytest.mark.parametrize(("act", "status"), [("send", 201), ("discard", 200)])
async def test_a_keyed_send_or_discard_of_a_draft_run_again_is_answered_as_made(
    api, people, operator, stack, act, status
):
    room, draft = await a_draft(api, people, operator)
    path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}/{act}"
    keyed = people.ada | {"Idempotency-Key": f"draft-{act}-1"}

    made = await answered_again_after_a_failover(
        api, path, {}, keyed, service="rooms", redis_url=stack.redis_url, operator=operator,
        status=status,
    )  # fmt: skip

    mine = [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]
    if act == "send":
        assert [(m["seq"], m["text"]) for m in mine] == [(made["seq"], draft["text"])]
    else:
        assert (made["state"], mine) == ("discarded", [])
    again = await api.post(path, json={}, headers=people.ada)  # unkeyed: not a retry
    assert await problem(again) == (409, "draft-closed")
