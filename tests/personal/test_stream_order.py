"""A room's stream carries every message stored, once, in seq order, whichever rooms
replica stored it. Each replica publishes what it stored live after storing it; two at once
could publish out of their seq order, and the stream, sending each live message newer than
its last, then never sent the older one: of 200 messages sent 20 at a time to two replicas,
a member's stream lacked 2 to 10. One whose replica died between storing and publishing it
never reached the stream at all."""

import asyncio

import msgspec

from libs.contracts import rooms
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.personal.conftest import room_with, say
from tests.personal.test_stream import _events
from tests.support import LINES_KEY, serving


async def test_messages_stored_at_once_by_two_replicas_each_reach_the_stream(
    api, people, settings_for
):
    second = serving(
        rooms.CONTRACT,
        settings_for("rooms", "r2"),
        lambda svc: serve_rooms(svc, Sealer.from_hex(LINES_KEY)),
    )
    async with second:
        room = await room_with(api, people, people.bob_id)
        path = f"/v1/rooms/{room['id']}/messages/stream"
        async with api.get(path, headers=people.bob) as stream:
            sent = []
            for batch in range(10):
                sent += await asyncio.gather(
                    *(
                        say(api, room, (people.ada, people.bob)[i % 2], f"{batch}.{i}")
                        for i in range(20)
                    )
                )
            got = await _events(stream, len(sent))
    assert [seq for seq, _ in got] == sorted(m["seq"] for m in sent)


async def test_a_message_stored_but_never_published_live_reaches_the_stream(api, people, operator):
    room = await room_with(api, people, people.bob_id)
    first = await say(api, room, people.ada, "first")
    async with api.get(
        f"/v1/rooms/{room['id']}/messages/stream", headers=people.bob | {"Last-Event-ID": "0"}
    ) as stream:
        assert [data["text"] for _, data in await _events(stream, 1)] == ["first"]
        # Stored as the rooms store it, by a replica that died before publishing it live.
        unheard = msgspec.structs.replace(
            msgspec.convert(first, rooms.Message), text="stored, then its replica died"
        )
        subject = f"rooms.msg.{people.org}.{room['id']}"
        await operator.jetstream().publish(subject, msgspec.json.encode(unheard))
        after = await say(api, room, people.ada, "after")
        got = await _events(stream, 2)
    assert [data["text"] for _, data in got] == ["stored, then its replica died", "after"]
    assert got[1][0] == after["seq"]
