"""Twilio asks each webhook once: an answer of 5xx loses a text (its error 11200), or says
an application error to a caller and loses their voicemail; it asks again only when it
could not connect. Before, a text or a voicemail that came while the rooms service
restarted was answered 503 and lost. The gateway now asks again through a transient
failure for most of the 15 s Twilio waits, and each is stored once."""

import asyncio

import pytest

from tests.personal.conftest import SERVED, history
from tests.personal.test_hip0524_09_personal_line import connect, sms
from tests.personal.test_hip0524_10_live_call import CALLER, ring, voice_line


@pytest.fixture
async def api(client_for, gateway_settings, scheduler_service, audit_service):
    return await client_for(gateway_settings, services=SERVED)


async def test_a_text_that_comes_while_rooms_restarts_is_stored_once(
    api, operator, people, rooms_up
):
    async with rooms_up():
        line = await connect(api, operator, people)
    # rooms is stopped: no replica serves the webhook's subject
    arriving = asyncio.create_task(
        sms(api, line, "+14155550100", "Is it still free?", sid="SMrestart0001")
    )
    async with rooms_up():
        arrived = await arriving
        assert arrived.status == 200, await arrived.text()
        stored = await arrived.json()
        again = await sms(api, line, "+14155550100", "Is it still free?", sid="SMrestart0001")
        assert (await again.json())["seq"] == stored["seq"]
        texts = [m["text"] for m in await history(api, {"id": stored["room"]}, people.ada)]
    assert texts == ["Is it still free?"]


async def test_a_voicemail_left_while_rooms_restarts_is_kept(api, operator, people, rooms_up):
    async with rooms_up():
        line = await voice_line(api, operator, people)
    left = asyncio.create_task(
        ring(api, line, "voicemail", RecordingUrl="https://rec.example/RE9", RecordingDuration="4")
    )
    async with rooms_up():
        answered = await left
        assert (answered.status, answered.content_type) == (200, "text/xml")
        listed = (await (await api.get("/v1/rooms", headers=people.ada)).json())["rooms"]
        [room] = [r for r in listed if r.get("correspondent") == CALLER]
        texts = [m["text"] for m in await history(api, room, people.ada)]
    assert texts == ["Voicemail (4 s): https://rec.example/RE9"]


async def test_a_text_while_rooms_stays_down_is_a_503_once_twilio_would_stop_waiting(
    api, operator, people, rooms_up, monkeypatch
):
    async with rooms_up():
        line = await connect(api, operator, people)
    monkeypatch.setattr("services.gateway.webhooks.CARRIER_WAITS_S", 1.0)
    refused = await sms(api, line, "+14155550100", "Anyone?")
    assert (refused.status, refused.headers["Retry-After"]) == (503, "1")
    assert (await refused.json())["type"] == "urn:tether:problem:service-unavailable"
