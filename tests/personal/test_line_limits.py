"""What leaves by a person's line is what its carrier takes whole: an SMS body of at most
1,600 characters (Twilio's), a WhatsApp text of 4,096 (Meta's). The agent's reply is
drafted for it and cut to it; a person's own text that is longer is refused before
anything is stored, and the window or question it would have answered stays as it was.
Before, any of these left as it was, up to 16,000 characters, for a carrier to refuse
after the room said it was sent. Through the gateway, on the running services."""

import html
import re

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts.rooms import LINE_MOST, ROOMS
from tests.personal.conftest import (
    Recorder,
    announce,
    behind,
    drafts,
    eventually,
    history,
    problem,
    route,
    set_level,
)
from tests.personal.test_hip0524_09_personal_line import connect, sms
from tests.personal.test_hip0524_10_live_call import _known_caller, ring, voice_line
from tests.personal.test_long_replies import Rambling

SMS_MOST = LINE_MOST["sms"]
ALICE = "+14155550100"


@pytest.fixture
def model() -> Recorder:
    return Rambling()  # longer than a message, so than any line


@pytest.fixture
def ladder_clock():
    """A one-minute window ends three real seconds after it opens."""
    return behind(57)


async def _talking(api, operator, people, level: str) -> tuple[dict, dict]:
    """Ada's SMS line, a conversation with Alice past its first contact (which always waits
    for Ada), and Ada's level there."""
    await announce(operator, people.ada_id)
    line = await connect(api, operator, people)
    first = await (await sms(api, line, ALICE, "Is the flat still available?")).json()
    room = {"id": first["room"]}
    await eventually(lambda: drafts(api, room, people.ada))
    await set_level(api, people.ada, level)
    return line, room


async def _at_once_on_a_line(api, operator, people) -> tuple[dict, dict]:
    """`_talking`, with Ada at send with no window."""
    line, room = await _talking(api, operator, people, "send")
    instant = await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    assert instant.status == 200, await instant.text()
    return line, room


async def _replied_at_once(api, operator, people, text: str) -> tuple[dict, dict, dict]:
    """Ada's line at send with no window, and her agent's reply to `text` from Alice: the
    line's room, Alice's message and the reply."""
    line, room = await _at_once_on_a_line(api, operator, people)
    arrived = await (await sms(api, line, ALICE, text)).json()

    async def replied() -> list[dict]:
        found = await history(api, room, people.ada)
        agents = (m for m in found if m["author_kind"] == "agent")
        return [m for m in agents if m.get("reply_to") == arrived["seq"]]

    [reply] = await eventually(replied)
    return room, arrived, reply


async def _left(operator, org: str) -> tuple[int, dict]:
    """What last left by an SMS line of `org`, and where it is on the stream."""
    raw = await operator.jetstream().get_last_msg(ROOMS.name, f"rooms.outbound.sms.{org}")
    return raw.seq, msgspec.json.decode(raw.data)


async def agents_sms(api, operator, people) -> tuple[dict, dict]:
    """Ada at send with no window on her line, and what left by it as her agent's reply to
    Alice: the line's room, and the message the carrier was handed."""
    line, room = await _talking(api, operator, people, "send")
    await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    await sms(api, line, ALICE, "Can I see it on Saturday?")

    async def sent() -> dict | None:
        _, out = await _left(operator, people.org)
        return out if out["text"].startswith("Thanks") else None

    return room, await eventually(sent)


async def test_the_agents_reply_by_sms_is_drafted_for_the_line_and_cut_to_it(
    api, people, operator, model
):
    _, out = await agents_sms(api, operator, people)
    assert len(out["text"]) == SMS_MOST and out["text"].endswith("…")
    told = [p.system for p in model.prompts if "leaves by sms" in p.system]
    assert told and "at most 1,600 characters" in told[-1]


async def test_a_persons_text_longer_than_their_line_takes_is_refused_and_nothing_leaves(
    api, people, operator
):
    _, room = await _talking(api, operator, people, "draft")
    before, _ = await _left(operator, people.org)
    path = f"/v1/rooms/{room['id']}/messages"
    refused = await api.post(path, json={"text": "n" * (SMS_MOST + 1)}, headers=people.ada)
    assert await problem(refused) == (422, "too-long-for-line")
    assert "1,600" in (await refused.json())["detail"]
    assert [m for m in await history(api, room, people.ada) if m["text"].startswith("n")] == []
    assert (await _left(operator, people.org))[0] == before
    whole = await api.post(path, json={"text": "w" * SMS_MOST}, headers=people.ada)
    assert whole.status == 201, await whole.text()
    assert (await _left(operator, people.org))[1]["text"] == "w" * SMS_MOST


async def test_a_draft_sent_longer_than_the_line_takes_is_still_the_persons(api, people, operator):
    """A send claims its draft before storing; refused before anything was stored, the
    draft is open again: sent shorter, or discarded."""
    _, room = await _talking(api, operator, people, "draft")
    [draft] = await drafts(api, room, people.ada)
    path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}"
    long = await api.post(f"{path}/send", json={"text": "n" * (SMS_MOST + 1)}, headers=people.ada)
    assert await problem(long) == (422, "too-long-for-line")
    assert [d["state"] for d in await drafts(api, room, people.ada)] == ["open"]
    discarded = await api.post(f"{path}/discard", json={}, headers=people.ada)
    assert discarded.status == 200, await discarded.text()


async def test_an_edit_the_line_cannot_carry_leaves_the_window_open(api, people, operator):
    line, _ = await _talking(api, operator, people, "send")
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await sms(api, line, ALICE, "Can I see it on Saturday?")

    async def opened() -> list[dict]:
        return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]

    [window] = await eventually(opened)
    assert len(window["text"]) == SMS_MOST
    before, _ = await _left(operator, people.org)
    for act in ("edit", "replace"):
        refused = await api.post(
            f"/v1/windows/{window['id']}/{act}",
            json={"text": "e" * (SMS_MOST + 1)},
            headers=people.ada,
        )
        assert await problem(refused) == (422, "too-long-for-line")
    [still] = await opened()
    assert still["state"] == "open" and (await _left(operator, people.org))[0] == before
    edited = await api.post(
        f"/v1/windows/{window['id']}/edit", json={"text": "Yes, 11am."}, headers=people.ada
    )
    assert edited.status == 201, await edited.text()
    assert (await _left(operator, people.org))[1]["text"] == "Yes, 11am."


async def test_an_edited_answer_the_line_cannot_carry_leaves_the_question_open(
    api, people, operator
):
    line, room = await _talking(api, operator, people, "confirm")
    await sms(api, line, ALICE, "Can I see it on Saturday?")

    async def asked() -> list[dict]:
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return listed["confirmations"]

    [confirmation] = await eventually(asked)
    assert [len(c) for c in confirmation["candidates"]] == [SMS_MOST]
    before, _ = await _left(operator, people.org)
    too_long = {"choice": {"type": "edit", "text": "e" * (SMS_MOST + 1)}}
    in_room = await api.post(
        f"/v1/rooms/{room['id']}/questions/{confirmation['question_seq']}/answer",
        json=too_long,
        headers=people.ada,
    )
    assert await problem(in_room) == (422, "too-long-for-line")
    here = await api.post(
        f"/v1/confirmations/{confirmation['id']}", json=too_long, headers=people.ada
    )
    assert await problem(here) == (422, "too-long-for-line")
    assert [c["id"] for c in await asked()] == [confirmation["id"]]
    assert (await _left(operator, people.org))[0] == before
    short = {"choice": {"type": "edit", "text": "Yes, 11am."}}
    answered = await api.post(
        f"/v1/confirmations/{confirmation['id']}", json=short, headers=people.ada
    )
    assert answered.status == 200, await answered.text()
    assert (await _left(operator, people.org))[1]["text"] == "Yes, 11am."


async def test_a_send_the_rooms_refuse_at_the_windows_end_fails_never_left_sending(
    api, people, operator
):
    """A reply routed as no agent of ours drafts it (longer than the line carries, as one
    held before the line's bound was): the rooms refuse it at the window's end, and a
    refusal would be refused again. Before, the fire was dropped and the window said
    `sending` for good."""
    _, room = await _talking(api, operator, people, "send")
    await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    [first] = await history(api, room, people.ada)
    before, _ = await _left(operator, people.org)
    reply = {
        "org": people.org, "person": people.ada_id, "room": room["id"], "transport": "sms",
        "first_contact": False, "reply_to": first["seq"], "candidates": ["r" * (SMS_MOST + 1)],
    }  # fmt: skip
    routed = await route(operator, reply)

    async def failed() -> dict | None:
        listed = await (await api.get("/v1/windows", headers=people.ada)).json()
        found = [w for w in listed["closed"] if w["id"] == routed["window"]]
        return found[0] if found and found[0]["state"] != "sending" else None

    window = await eventually(failed, timeout=20)
    assert window["state"] == "failed", window
    assert (await _left(operator, people.org))[0] == before
    [record] = [
        r for r in await records(operator.jetstream(), people.org)
        if r.action == "ladder.window.failed" and r.target == routed["window"]
    ]  # fmt: skip
    assert "1,600" in record.data["error"]


async def test_what_the_agent_says_on_a_call_is_what_the_carrier_says(api, people, operator, model):
    """Twilio's basic voices say at most 4,096 characters of a <Say>; before, the agent's
    whole reply (16,000 characters) was put in it, which the carrier would not say."""
    await announce(operator, people.ada_id)
    line = await voice_line(api, operator, people)
    await _known_caller(api, line, people.ada)
    await set_level(api, people.ada, "send")
    answered = await ring(api, line)
    said = html.unescape(re.search(r"<Say>(.+)</Say>", await answered.text(), re.S)[1])
    assert len(said) == LINE_MOST["voice"] and said.endswith("…")
    assert "is said on a call: at most 4,096 characters" in model.prompts[-1].system


async def test_a_pick_the_line_cannot_carry_leaves_the_question_open_for_an_edit(
    api, people, operator
):
    """A confirmation asked before lines were bounded may offer a candidate longer than its
    line carries (routed here as no agent of ours drafts it). Before, picking it stored the
    answer and then the send was refused: answered, nothing sent, nothing left to do. Now
    the pick is refused first, and an edit still answers."""
    _, room = await _talking(api, operator, people, "confirm")
    [first] = await history(api, room, people.ada)
    reply = {
        "org": people.org, "person": people.ada_id, "room": room["id"], "transport": "sms",
        "first_contact": False, "reply_to": first["seq"],
        "candidates": ["r" * (SMS_MOST + 1), "Yes, Saturday works."],
    }  # fmt: skip
    routed = await route(operator, reply)
    before, _ = await _left(operator, people.org)
    path = f"/v1/confirmations/{routed['confirmation']}"
    long_pick = await api.post(path, json={"choice": {"type": "pick", "option": 0}},
                               headers=people.ada)  # fmt: skip
    assert await problem(long_pick) == (422, "too-long-for-line")
    assert (await _left(operator, people.org))[0] == before
    short_pick = await api.post(path, json={"choice": {"type": "pick", "option": 1}},
                                headers=people.ada)  # fmt: skip
    assert short_pick.status == 200, await short_pick.text()
    assert (await _left(operator, people.org))[1]["text"] == "Yes, Saturday works."
