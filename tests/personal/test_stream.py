"""Server-sent events: a room's new messages reach its members as they are stored."""

import asyncio

import msgspec

from tests.personal.conftest import SERVED, problem, room_with, say


async def _events(response, count: int) -> list[tuple[int, dict]]:
    """The next `count` events of an event stream, as (id, data)."""
    found: list[tuple[int, dict]] = []
    event: dict[str, str] = {}
    while len(found) < count:
        line = (await asyncio.wait_for(response.content.readline(), 10)).decode().rstrip("\n")
        if line.startswith(":"):
            continue
        if line == "":
            if event:
                found.append((int(event["id"]), msgspec.json.decode(event["data"])))
            event = {}
            continue
        name, _, value = line.partition(": ")
        event[name] = value
    return found


async def test_members_see_history_then_each_new_message_once(api, people):
    room = await room_with(api, people, people.bob_id)
    old = await say(api, room, people.ada, "before the stream")
    async with api.get(f"/v1/rooms/{room['id']}/messages/stream", headers=people.bob) as stream:
        assert stream.status == 200
        assert stream.headers["Content-Type"] == "text/event-stream"
        [(seq, first)] = await _events(stream, 1)
        assert (seq, first) == (old["seq"], old)
        sent = [
            await say(api, room, who, f"live {i}")
            for i, who in enumerate((people.ada, people.bob, people.ada_agent))
        ]
        live = await _events(stream, 3)
    assert [data for _, data in live] == sent
    assert [seq for seq, _ in live] == [m["seq"] for m in sent]


async def test_last_event_id_resumes_after_it(api, people):
    room = await room_with(api, people)
    sent = [await say(api, room, people.ada, f"m{i}") for i in range(3)]
    headers = people.ada | {"Last-Event-ID": str(sent[0]["seq"])}
    async with api.get(f"/v1/rooms/{room['id']}/messages/stream", headers=headers) as stream:
        got = await _events(stream, 2)
    assert [data["text"] for _, data in got] == ["m1", "m2"]


async def test_a_non_member_gets_no_stream(api, people):
    room = await room_with(api, people)
    for who in (people.bob, people.root, people.eve):
        response = await api.get(f"/v1/rooms/{room['id']}/messages/stream", headers=who)
        assert await problem(response) == (404, "room-not-found")
    response = await api.get(f"/v1/rooms/{room['id']}/messages/stream")
    assert await problem(response) == (401, "token-missing")


async def test_a_stopping_gateway_ends_its_streams_at_once(
    client_for, gateway_settings, people, api
):
    room = await room_with(api, people)
    gateway = await client_for(gateway_settings, services=SERVED)
    async with gateway.get(f"/v1/rooms/{room['id']}/messages/stream", headers=people.ada) as stream:
        assert stream.status == 200
        closing = asyncio.create_task(gateway.server.close())
        rest = await asyncio.wait_for(stream.content.read(), 10)
        await closing
    assert rest == b""  # ended cleanly: no event, no error
