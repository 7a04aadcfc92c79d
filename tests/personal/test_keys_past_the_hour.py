"""A keyed message a service asks the rooms to store (the ladder's send, its notice and its
question; a Power-of-Action ask; a Chonk's word) is stored once, however late it is asked
again. The history's stream knows the ids it stored under for an hour only, and a reader's
message parked and sent again later (`tether dead --send-again`, once its cause is fixed)
routes its reply again after that. Before, the reply was stored, and sent out by the
person's line, a second time.
"""

import secrets

import msgspec

from libs.contracts import codec, rooms
from libs.contracts.problem import PROBLEM_HEADER
from libs.contracts.rooms import ROOMS
from tests.personal.conftest import (
    an_hour_on,
    announce,
    eventually,
    history,
    room_with,
    route,
    say,
    set_level,
)
from tests.personal.test_instant_own_answer import _at_once, _replies_to
from tests.personal.test_line_limits import _replied_at_once


async def test_an_instant_send_routed_again_past_the_hour_is_the_send_made(api, operator, people):
    room = await _at_once(api, operator, people)
    lunch = await say(api, room, people.bob, "Lunch on Friday?", to=people.ada_id)

    async def replied() -> list[dict]:
        return _replies_to(await history(api, room, people.ada), lunch["seq"])

    [reply] = await eventually(replied)
    again = {"org": people.org, "person": people.ada_id, "room": room["id"],
             "reply_to": lunch["seq"], "candidates": [reply["text"]]}  # fmt: skip
    async with an_hour_on(operator.jetstream()):
        routed = await route(operator, again)

    assert routed["sent_seq"] == reply["seq"]
    assert _replies_to(await history(api, room, people.ada), lunch["seq"]) == [reply]


async def test_on_a_line_it_leaves_once(api, operator, people):
    room, arrived, reply = await _replied_at_once(api, operator, people, "Saturday at ten?")
    js = operator.jetstream()
    outbound = f"rooms.outbound.sms.{people.org}"  # the line's code, and the reply
    handed = (await js.stream_info(ROOMS.name, subjects_filter=outbound)).state.subjects
    again = {"org": people.org, "person": people.ada_id, "room": room["id"], "transport": "sms",
             "reply_to": arrived["seq"], "candidates": [reply["text"]]}  # fmt: skip
    async with an_hour_on(js):
        routed = await route(operator, again)

    assert routed["sent_seq"] == reply["seq"]
    assert _replies_to(await history(api, room, people.ada), arrived["seq"]) == [reply]
    assert handed == {outbound: 2}
    assert (await js.stream_info(ROOMS.name, subjects_filter=outbound)).state.subjects == handed


async def test_a_confirmation_asked_again_past_the_hour_is_the_question_asked(
    api, operator, people
):
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "confirm")
    room = await room_with(api, people, people.bob_id)
    supper = await say(api, room, people.bob, "Supper on Monday?", to=people.ada_id)

    async def asked() -> list[dict]:
        found = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return [c for c in found["confirmations"] if c["reply_to"] == supper["seq"]]

    [confirmation] = await eventually(asked)
    again = {"org": people.org, "person": people.ada_id, "room": room["id"],
             "reply_to": supper["seq"], "candidates": confirmation["candidates"]}  # fmt: skip
    async with an_hour_on(operator.jetstream()):
        routed = await route(operator, again)

    assert routed["confirmation"] == confirmation["id"]
    questions = [m for m in await history(api, room, people.ada) if m.get("question")]
    assert [q["seq"] for q in questions] == [confirmation["question_seq"]]


def _told(org: str, person: str, key: str) -> rooms.Tell:
    return rooms.Tell(org=org, person=person, bot="build", title="Chief Build Officer",
                      text="A nudge.", key=key)  # fmt: skip


async def _stored(nc, subject: str, request: msgspec.Struct) -> dict:
    reply = await nc.request(subject, codec.encode(request), timeout=10)
    assert PROBLEM_HEADER not in (reply.headers or {}), reply.data
    return msgspec.json.decode(reply.data)


async def test_a_word_told_or_asked_again_past_the_hour_is_the_one_stored(api, operator, people):
    """A Chonk's word (`tell`) and a Power-of-Action ask (`ask_person`), under their keys."""
    mark = secrets.token_hex(4)
    tell = _told(people.org, people.ada_id, f"nudge-{mark}")
    ask = rooms.AskPerson(org=people.org, person=people.ada_id, text="May it buy this?",
                          options=("Yes", "No"), key=f"ask-{mark}")  # fmt: skip
    asked = [(rooms.TELL.published_by("chonk"), tell), (rooms.ASK_PERSON.published_by("poa"), ask)]

    first = [await _stored(operator, *a) for a in asked]
    async with an_hour_on(operator.jetstream()):
        again = [await _stored(operator, *a) for a in asked]
    assert again == first


async def test_a_key_is_its_orgs_own(api, operator, people):
    """Two tenants may name their Chonks' runs alike, and so the keys of what the runs say:
    one tenant's key stores nothing of the other's and refuses none of it. Before, the
    second tenant's word was refused 422 for the first's key."""
    other = f"org-{secrets.token_hex(6)}"
    key, tell = f"run_owner_update-{secrets.token_hex(4)}", rooms.TELL.published_by("chonk")
    ours = await _stored(operator, tell, _told(people.org, people.ada_id, key))
    theirs = await _stored(operator, tell, _told(other, f"{other}/ada", key))

    assert ours["room"] != theirs["room"]
    assert (ours["to"], theirs["to"]) == (people.ada_id, f"{other}/ada")
    assert await _stored(operator, tell, _told(other, f"{other}/ada", key)) == theirs
