"""A room's stream and a person's pending stream hear of a change by a core NATS message (a
message's live word, a nudge), sent at most once. One lost as it went out (its publisher's
network failed there) left the stream behind until something else came: a message stored
was not shown, nor a draft waiting on the person. Now a stream that heard nothing for
`TETHER_STREAM_REREAD` seconds reads again what it shows.

A nudge is lost at a TCP proxy between the rooms replica and its server (`Link`), which
drops it and cuts every connection through it for a second; a message's word, by storing
the message as the rooms do without publishing it."""

import msgspec
import pytest

from libs.contracts import rooms
from tests.personal.conftest import WHOLE, announce, eventually, room_with, say
from tests.personal.test_pending import _pending_event
from tests.personal.test_stream import _events

ROOMS_NUDGE = b"PUB tether.live.rooms.pending."


@pytest.fixture
def rooms_service(linked_rooms):
    return linked_rooms


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_stream_whose_nudge_was_lost_reads_the_list_again(
    client_for, gateway_settings, rooms_service, api, operator, people
):
    link = rooms_service
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    gateway = await rereading(client_for, gateway_settings)
    async with gateway.get("/v1/pending/stream", headers=people.ada) as stream:
        assert await _pending_event(stream) == []
        link.cut_at(ROOMS_NUDGE, 1.0)
        await say(api, room, people.bob, "Are you in on Friday?", to=people.ada_id)
        (draft,) = await eventually(lambda: drafts_waiting(api, people.ada))
        assert not link.armed, "the draft's nudge went through"
        assert await _pending_event(stream) == [draft]


async def test_a_stream_whose_messages_live_word_was_lost_reads_the_room_again(
    client_for, gateway_settings, api, operator, people
):
    room = await room_with(api, people, people.bob_id)
    first = await say(api, room, people.ada, "first")
    gateway = await rereading(client_for, gateway_settings)
    path = f"/v1/rooms/{room['id']}/messages/stream"
    async with gateway.get(path, headers=people.bob | {"Last-Event-ID": "0"}) as stream:
        assert [data["text"] for _, data in await _events(stream, 1)] == ["first"]
        # Stored as the rooms store it, by a replica whose word of it never went out.
        unheard = msgspec.structs.replace(
            msgspec.convert(first, rooms.Message), text="stored, its word lost"
        )
        stored = await operator.jetstream().publish(
            f"rooms.msg.{people.org}.{room['id']}", msgspec.json.encode(unheard)
        )
        [(seq, data)] = await _events(stream, 1)
    assert (seq, data["text"]) == (stored.seq, "stored, its word lost")


async def rereading(client_for, gateway_settings):
    """A gateway whose streams read again after 2 s of silence."""
    settings = msgspec.structs.replace(gateway_settings, stream_reread=2.0)
    return await client_for(settings, services=WHOLE)


async def drafts_waiting(api, headers: dict) -> list[dict] | None:
    """The drafts in the person's list, once there are any; None while the list is
    unavailable (the rooms reconnecting), as a client asks again after a 503."""
    response = await api.get("/v1/pending", headers=headers)
    if response.status >= 500:
        return None
    assert response.status == 200, await response.text()
    return [i for i in (await response.json())["items"] if i["kind"] == "draft"] or None
