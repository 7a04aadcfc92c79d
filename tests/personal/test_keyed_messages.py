"""Issue 15: a message whose answer was lost in a failover, sent again with its
Idempotency-Key, is answered as it was and stored once; so is a room."""

from tests.personal.conftest import history, room_with
from tests.support import forget_idempotency_key


async def test_a_keyed_message_run_again_is_stored_once(api, people, stack):
    room = await room_with(api, people, people.bob_id)
    path, keyed = f"/v1/rooms/{room['id']}/messages", people.ada | {"Idempotency-Key": "hello-1"}

    first = await api.post(path, json={"text": "hello"}, headers=keyed)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, "hello-1")
    again = await api.post(path, json={"text": "hello"}, headers=keyed)
    assert again.status == 201, await again.text()
    assert (await again.json())["seq"] == (await first.json())["seq"]

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

    listed = await api.get("/v1/rooms", headers=people.bob)
    assert [r["id"] for r in (await listed.json())["rooms"]] == [(await first.json())["id"]]
