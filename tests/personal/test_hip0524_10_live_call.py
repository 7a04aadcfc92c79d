"""hip-0524 §16.10 and §11: on a live call there is no window; the agent speaks only at
send, and confirm is never shortened into a window."""

import html
import re
import secrets
from urllib.parse import urlencode

import msgspec
import pytest

from libs.contracts.ladder import DECIDE
from services.rooms.domain.lines import sign_twilio
from tests.personal.conftest import (
    announce,
    fresh_number,
    history,
    room_with,
    route,
    say,
    set_level,
)
from tests.personal.test_hip0524_09_personal_line import code_sent


async def decide(nc, people, room: str, **fields) -> dict:
    """Ask the ladder as the agents service does (its credential is the subject)."""
    body = {"org": people.org, "person": people.ada_id, "room": room, **fields}
    reply = await nc.request(DECIDE.published_by("agents"), msgspec.json.encode(body), timeout=5)
    return msgspec.json.decode(reply.data)


@pytest.mark.parametrize(
    "level, action, window",
    [("draft", "silent", None), ("confirm", "silent", None), ("send", "send", "instant")],
)
async def test_on_a_live_call_only_send_speaks_and_never_after_a_window(
    api, people, connect, level, action, window
):
    await set_level(api, people.ada, level)
    await api.put("/v1/ladder/window", json={"window": "15m"}, headers=people.ada)
    async with connect("agents") as nc:
        decided = await decide(nc, people, "r-00000000000000bb", synchronous=True)
    assert (decided["level"], decided["action"], decided["window"]) == (level, action, window)


async def test_a_confirm_on_a_live_call_stores_no_question_and_sends_nothing(api, people, connect):
    await api.post("/v1/agents/me", json={}, headers=people.ada)
    await set_level(api, people.ada, "confirm")
    room = await room_with(api, people, people.bob_id)
    asked = await say(api, room, people.bob, "(on the phone) Are you there?")
    reply = {
        "org": people.org,
        "person": people.ada_id,
        "room": room["id"],
        "synchronous": True,
        "reply_to": asked["seq"],
        "candidates": ["Yes, go on."],
    }
    async with connect("agents") as nc:
        routed = await route(nc, reply)
    assert routed["decision"]["action"] == "silent"
    assert await history(api, room, people.ada) == [asked]


async def test_a_first_contact_on_a_live_call_is_not_answered_even_at_send(api, people, connect):
    await set_level(api, people.ada, "send")
    async with connect("agents") as nc:
        decided = await decide(
            nc, people, "r-00000000000000cc", synchronous=True, first_contact=True
        )
    assert decided["action"] == "silent"


# Through HTTP: a person's voice line, and a carrier calling it (Twilio Programmable Voice).

TOKEN = "twilio-auth-token-of-ada-voice"
CALLER = "+14155550123"


async def voice_line(api, operator, people, forward_to: str | None = None) -> dict:
    body = {"transport": "voice", "address": fresh_number(), "credential": TOKEN}
    if forward_to is not None:
        body["forward_to"] = forward_to
    assert (await api.post("/v1/lines", json=body, headers=people.ada)).status == 201
    code = await code_sent(operator, "voice", people.org, body["address"])
    proven = await api.post("/v1/lines/voice/verify", json={"code": code}, headers=people.ada)
    assert proven.status == 200, await proven.text()
    return await proven.json()


async def ring(
    api, line: dict, path: str = "call", token: str = TOKEN, sid: str | None = None, **extra: str
):
    """The carrier's signed webhook for a call from CALLER to `line`."""
    url_path = f"/v1/lines/voice/{path}"
    fields = {"From": CALLER, "To": line["address"], "CallSid": sid or f"CA{secrets.token_hex(16)}",
              "CallStatus": "ringing", **extra}  # fmt: skip
    signature = sign_twilio(token, str(api.make_url(url_path)), list(fields.items()))
    return await api.post(url_path, data=urlencode(fields), headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature,
    })  # fmt: skip


async def _known_caller(api, line: dict, person: dict) -> str:
    """CALLER calls once (a first contact: never answered) and leaves a voicemail, so the
    next call is from someone the room knows. The room's id."""
    first = await ring(api, line)
    assert first.status == 200, await first.text()
    twiml = await first.text()
    assert first.content_type == "text/xml" and "<Record " in twiml and "<Say>" in twiml
    action = re.search(r'action="([^"]+)"', twiml)[1]
    assert action.endswith("/v1/lines/voice/voicemail")
    left = await ring(api, line, "voicemail", RecordingUrl="https://rec.example/RE1",
                      RecordingDuration="7")  # fmt: skip
    assert left.status == 200, await left.text()
    # The carrier runs what this answers, to a caller still on the line: TwiML, never JSON
    # (before, JSON: "an application error has occurred" was said to them).
    assert left.content_type == "text/xml"
    assert (await left.text()).endswith(
        "<Response><Say>Your message was taken. Goodbye.</Say><Hangup/></Response>"
    )
    listed = (await (await api.get("/v1/rooms", headers=person)).json())["rooms"]
    [room] = [r for r in listed if r.get("correspondent") == CALLER]
    return room["id"]


async def test_hip0524_16_10_at_send_the_agent_takes_the_call_and_speaks_at_once(
    api, operator, people
):
    await announce(operator, people.ada_id)
    line = await voice_line(api, operator, people)
    room_id = await _known_caller(api, line, people.ada)
    await set_level(api, people.ada, "send")
    await api.put("/v1/ladder/window", json={"window": "15m"}, headers=people.ada)
    answered = await ring(api, line)
    twiml = await answered.text()
    said = re.search(r"<Say>(.+)</Say>", twiml)[1]
    assert said and "<Record" not in twiml and "<Dial" not in twiml
    messages = await history(api, {"id": room_id}, people.ada)
    assert [m["text"] for m in messages] == [
        f"Call from {CALLER}", "Voicemail (7 s): https://rec.example/RE1",
        f"Call from {CALLER}", html.unescape(said),
    ]  # fmt: skip
    spoken = messages[-1]
    assert (spoken["author_kind"], spoken["on_behalf_of"], spoken["author"]) == (
        "agent", people.ada_id, f"agent:{people.ada_id}"
    )  # fmt: skip
    # No window was opened for it, however long the person's is.
    windows = await (await api.get("/v1/windows", headers=people.ada)).json()
    assert windows["windows"] == []


@pytest.mark.parametrize("level", ["draft", "confirm"])
async def test_hip0524_16_10_at_draft_and_confirm_the_agent_does_not_speak(
    api, operator, people, level
):
    await announce(operator, people.ada_id)
    forward = fresh_number()
    line = await voice_line(api, operator, people, forward_to=forward)
    first = await ring(api, line)  # forwarded, first contact or not
    assert f"<Dial>{forward}</Dial>" in await first.text()
    await set_level(api, people.ada, level)
    answered = await ring(api, line)
    twiml = await answered.text()
    assert f"<Dial>{forward}</Dial>" in twiml and "<Say>" not in twiml
    rooms_ = (await (await api.get("/v1/rooms", headers=people.ada)).json())["rooms"]
    (room,) = [r for r in rooms_ if r.get("correspondent") == CALLER]
    messages = await history(api, room, people.ada)
    assert [m["author_kind"] for m in messages] == ["human", "human"]  # the calls, no more
    assert not any(m.get("question") for m in messages)
    confirmations = await (await api.get("/v1/confirmations", headers=people.ada)).json()
    assert confirmations["confirmations"] == []


async def test_a_call_not_signed_by_the_line_is_refused_and_stores_nothing(api, operator, people):
    await announce(operator, people.ada_id)
    line = await voice_line(api, operator, people)
    forged = await ring(api, line, token="not-the-line-s-token")
    assert forged.status == 403
    rooms_ = (await (await api.get("/v1/rooms", headers=people.ada)).json())["rooms"]
    assert [r for r in rooms_ if r.get("correspondent") == CALLER] == []


async def test_a_carrier_s_retry_of_a_first_call_is_still_a_first_contact(api, operator, people):
    await announce(operator, people.ada_id)
    line = await voice_line(api, operator, people)
    await set_level(api, people.ada, "send")
    sid = f"CA{secrets.token_hex(16)}"
    for _ in range(2):  # the carrier asks again, with the same call
        answered = await ring(api, line, sid=sid)
        assert answered.status == 200
        assert "<Record " in await answered.text()  # a voicemail: the agent does not speak
    rooms_ = (await (await api.get("/v1/rooms", headers=people.ada)).json())["rooms"]
    (room,) = [r for r in rooms_ if r.get("correspondent") == CALLER]
    assert [m["text"] for m in await history(api, room, people.ada)] == [f"Call from {CALLER}"]


async def test_a_line_that_forwards_to_itself_is_refused(api, people):
    """Each call it forwarded would ring the line again: a loop the carrier bills leg by
    leg. Before, it was connected."""
    number = fresh_number()
    body = {"transport": "voice", "address": number, "credential": TOKEN, "forward_to": number}
    refused = await api.post("/v1/lines", json=body, headers=people.ada)
    assert refused.status == 422
    assert "forward_to is the line itself" in (await refused.json())["detail"]
