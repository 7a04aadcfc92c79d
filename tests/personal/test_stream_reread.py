"""A room's stream and a person's pending stream hear of a change by a core NATS message (a
message's live word, a nudge), sent at most once. One lost as it went out (its publisher's
network failed there) left the stream behind until something else came: a message stored
was not shown, nor a draft waiting on the person. Now a stream reads again what it shows
once it has not for `TETHER_STREAM_REREAD` seconds, a delivery's move too, however busy its
room.

A nudge or a delivery's word is lost at a TCP proxy between the rooms replica and its
server (`Link`), which drops it and cuts every connection through it for a second; a
message's word, by storing the message as the rooms do without publishing it."""

import asyncio
import json
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts import rooms
from libs.contracts.rooms import delivery_subject
from services.gateway.events import lately_moved
from tests.personal.conftest import WHOLE, announce, eventually, room_with, say
from tests.personal.test_delivery import _sent_by_line, _stream, status
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
    client_for, gateway_settings, api, linked_rooms, operator, people
):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    gateway = await rereading(client_for, gateway_settings)
    async with gateway.get("/v1/pending/stream", headers=people.ada) as stream:
        assert await _pending_event(stream) == []
        linked_rooms.cut_at(ROOMS_NUDGE, 1.0)
        await say(api, room, people.bob, "Are you in on Friday?", to=people.ada_id)
        (draft,) = await eventually(lambda: drafts_waiting(api, people.ada))
        assert not linked_rooms.armed, "the draft's nudge went through"
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


async def test_a_stream_whose_deliverys_live_word_was_lost_reads_it_again_however_busy(
    client_for, gateway_settings, api, linked_rooms, operator, people
):
    """The room's live words come every 0.2 s meanwhile (each naming a message the stream
    has sent), so the stream never hears nothing for long: no word moves a delivery shown
    before it, and the deliveries are read again all the same."""
    line, room, sent = await _sent_by_line(api, operator, people)
    gateway = await rereading(client_for, gateway_settings)
    word = json.dumps({"seq": sent["seq"]}).encode()

    async def busy() -> None:
        while True:
            await operator.publish(rooms.live_subjects(room["id"], people.ada_id)[0], word)
            await asyncio.sleep(0.2)

    async with _stream(gateway, people, room) as events:
        for _ in range(2):
            assert (await asyncio.wait_for(events.get(), 10))[0] == "message"
        linked_rooms.cut_at(f"PUB {delivery_subject(room['id'])}".encode(), 1.0)
        # Its answer may be lost with the word: what the stream shows is the test.
        told = asyncio.create_task(status(api, line, sent["delivery"]["carrier_id"], "delivered"))
        words = asyncio.create_task(busy())
        try:
            event = await asyncio.wait_for(events.get(), 20)
        finally:
            words.cancel()
        assert not linked_rooms.armed, "the delivery's word went through"
        await told
    assert event[0] == "delivery"
    assert (event[1]["seq"], event[1]["delivery"]["status"]) == (sent["seq"], "delivered")


async def rereading(client_for, gateway_settings):
    """A gateway whose streams read again what they show every 2 s."""
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


def test_a_delivery_not_moved_for_an_hour_is_read_again_no_more():
    """A carrier reports in minutes: a delivery shown as `sent` two hours ago would have
    every message after it paged at each reread, for as long as the stream stays open."""
    now = datetime.now(UTC)

    def sent(ago: timedelta) -> rooms.Delivery:
        return rooms.Delivery(transport="sms", carrier_id="SM1", status="sent", at=now - ago)

    moving = {3: sent(timedelta(hours=2)), 8: sent(timedelta(minutes=59)), 9: sent(timedelta())}
    assert list(lately_moved(moving, now)) == [8, 9]
