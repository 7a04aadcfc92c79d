"""Server-sent events: a room's new messages reach its members as they are stored."""

import asyncio

import msgspec

from libs.runtime.bus import flushed
from services.gateway.app import NATS
from tests.personal.conftest import SERVED, eventually, problem, room_with, say
from tests.support import Link, bearer, org_agent, token


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


async def test_members_see_history_then_each_new_message_once(api, operator, people):
    bot = await org_agent(api, operator, people.org, people.root, "researcher", "bot")
    room = await room_with(api, people, people.bob_id, bot)
    as_bot = bearer(token(org=people.org, user=people.ada_id, act=bot))
    old = await say(api, room, people.ada, "before the stream")
    async with api.get(f"/v1/rooms/{room['id']}/messages/stream", headers=people.bob) as stream:
        assert stream.status == 200
        assert stream.headers["Content-Type"] == "text/event-stream"
        # As every answer of a person's; and passed on by a buffering proxy as it comes.
        assert stream.headers["Cache-Control"] == "no-store"
        assert stream.headers["X-Content-Type-Options"] == "nosniff"
        assert stream.headers["X-Accel-Buffering"] == "no"
        assert stream.headers["Server"] == "tether"
        [(seq, first)] = await _events(stream, 1)
        assert (seq, first) == (old["seq"], old)
        sent = [
            await say(api, room, who, f"live {i}")
            for i, who in enumerate((people.ada, people.bob, as_bot))
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


async def test_a_cursor_that_is_no_seq_is_refused_by_name(api, people):
    """Before, "²" (a digit to `str.isdigit`, none to `int`) was a 500, and a seq past any a
    stream holds opened a stream that would never say anything."""
    room = await room_with(api, people)
    path = f"/v1/rooms/{room['id']}/messages/stream"
    for after in ("²", "-1", "9" * 30):
        response = await api.get(path, params={"after": after}, headers=people.ada)
        assert await problem(response) == (422, "invalid-request"), after
    response = await api.get(path, headers=people.ada | {"Last-Event-ID": "9" * 30})
    assert await problem(response) == (422, "invalid-request")


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


async def test_a_stream_whose_gateway_lost_the_bus_sends_what_was_stored_meanwhile(
    client_for, gateway_settings, people, api
):
    """The live messages published while a gateway is off the bus never reach it: once
    back, its streams read what was stored since their last message, and send it."""
    room = await room_with(api, people, people.bob_id)
    first = await say(api, room, people.ada, "before")
    link = Link(gateway_settings.nats_url)
    async with link as url:
        settings = msgspec.structs.replace(gateway_settings, nats_url=url)
        gateway = await client_for(settings, services=SERVED)
        nc = gateway.server.app[NATS]
        path = f"/v1/rooms/{room['id']}/messages/stream"
        async with gateway.get(path, headers=people.bob) as stream:
            assert await _events(stream, 1) == [(first["seq"], first)]
            link.cut()
            await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
            meanwhile = [await say(api, room, people.ada, f"meanwhile {i}") for i in range(2)]
            link.mend()
            await eventually(lambda: asyncio.sleep(0, nc.is_connected), timeout=20)
            await flushed(nc)
            after = await say(api, room, people.ada, "after")
            got = await _events(stream, 3)
    assert [data for _, data in got] == [*meanwhile, after]


async def test_a_removed_bots_stream_ends_at_its_next_reading(
    client_for, gateway_settings, agents_service, rooms_service, operator, people
):
    """Its tokens are refused once it is removed, and a stream it had open ran on until the
    token expired (twelve hours, for `tether token`'s). Now a stream reads whether its
    caller stands each time it reads its room again (TETHER_STREAM_REREAD), and ends with
    a `refused` event saying why."""
    settings = msgspec.structs.replace(gateway_settings, stream_reread=1.0)
    api = await client_for(settings, services=SERVED)
    bot = await org_agent(api, operator, people.org, people.root, "researcher", "bot")
    room = await room_with(api, people, bot)
    as_bot = bearer(token(org=people.org, user=people.ada_id, act=bot))
    async with api.get(f"/v1/rooms/{room['id']}/messages/stream", headers=as_bot) as stream:
        assert stream.status == 200
        said = await say(api, room, people.ada, "standup at ten")
        assert await _events(stream, 1) == [(said["seq"], said)]
        removed = await api.post(f"/v1/agents/{bot}/remove", headers=people.root)
        assert removed.status == 200, await removed.text()
        lines: list[str] = []
        async with asyncio.timeout(20):  # keepalives come every second meanwhile
            while (line := await stream.content.readline()) != b"":
                lines.append(line.decode().rstrip("\n"))
    assert "event: refused" in lines
    refused = msgspec.json.decode(lines[lines.index("event: refused") + 1].removeprefix("data: "))
    assert refused["type"] == "urn:tether:problem:act-not-standing"
