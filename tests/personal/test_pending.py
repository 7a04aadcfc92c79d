"""Issue 14.1: one list of everything waiting on a person, across rooms and services, each
item with the actions it admits; and the same list as server-sent events, sent again when
it changes. Through the gateway, on the running agents, rooms, ladder, scheduler, poa and
mod services."""

import asyncio
import contextlib
import json
import uuid
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts import ladder, rooms
from libs.contracts.base import key_token
from libs.contracts.registry import live_subject
from libs.contracts.streams import EVENTS
from libs.runtime.calls import call
from services.gateway.app import NATS
from services.poa.domain.open_asks import OPEN_MOST
from tests.personal.conftest import (
    WHOLE,
    announce,
    eventually,
    problem,
    raised,
    room_with,
    say,
    set_level,
)
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.support import Link, bearer, forget_idempotency_key, token

SHOPPER = "urn:example:agent:a_456"
HIDE_BOARD = {"op": "hide", "kind": "apps", "id": "hanzo/board/board"}


@pytest.fixture
def api(whole_api):
    return whole_api


async def pending(api, headers: dict) -> list[dict]:
    response = await api.get("/v1/pending", headers=headers)
    assert response.status == 200, await response.text()
    return (await response.json())["items"]


async def _of_kind(api, headers: dict, kind: str, count: int = 1) -> list[dict]:
    async def found() -> list[dict] | None:
        items = [i for i in await pending(api, headers) if i["kind"] == kind]
        return items if len(items) == count else None

    items = await eventually(found)
    assert items, f"no {count} {kind} in {await pending(api, headers)}"
    return items


async def _do(api, headers: dict, item: dict, name: str, **body: object) -> dict:
    (action,) = [a for a in item["actions"] if a["name"] == name]
    sent = {**(action.get("body") or {}), **body}
    response = await api.request(
        action["method"], action["path"], json=sent if action.get("body") is not None else None,
        headers=headers,
    )  # fmt: skip
    assert response.status < 300, await response.text()
    return await response.json(content_type=None) if response.status != 204 else {}


async def ask_over_the_limit(api, people) -> None:
    """Ada's shopping agent asks to spend over the grant's per-act limit."""
    grant = valid_now(root_grant(people.ada_id))
    issued = await api.post("/v1/poa/grants", json={"grant": grant}, headers=people.ada)
    assert issued.status == 201, await issued.text()
    shopper = bearer(token(org=people.org, user=people.ada_id, act=SHOPPER))
    acted = await api.post("/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(140)},
                           headers=shopper)  # fmt: skip
    assert acted.status == 202, await acted.text()


async def test_everything_waiting_on_a_person_is_one_list_and_each_item_is_done_from_it(
    api, operator, people
):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    assert await pending(api, people.ada) == []

    # A draft (level draft, the default).
    await say(api, room, people.bob, "Can you send the deck?", to=people.ada_id)
    (draft,) = await _of_kind(api, people.ada, "draft")
    assert draft["room"] == room["id"] and draft["text"]
    assert [a["name"] for a in draft["actions"]] == ["send", "edit", "discard"]

    # A confirmation (level confirm): decline is among its actions, named.
    await set_level(api, people.ada, "confirm", "room", room["id"])
    await say(api, room, people.bob, "And the notes?", to=people.ada_id)
    (confirmation,) = await _of_kind(api, people.ada, "confirmation")
    names = [a["name"] for a in confirmation["actions"]]
    assert names[0] == "pick 0" and names[-1] == "decline" and "edit" in names
    assert confirmation["candidates"] and confirmation["text"] == confirmation["candidates"][0]

    # A window (level send, 1h): its deadline is when it goes.
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await set_level(api, people.ada, "send", "room", room["id"])
    await say(api, room, people.bob, "Thanks!", to=people.ada_id)
    (window,) = await _of_kind(api, people.ada, "window")
    assert window["deadline"] and window["detail"]["window"] == "1h"

    # A PoA ask, and a draft over Ada's own layer.
    await ask_over_the_limit(api, people)
    (ask,) = await _of_kind(api, people.ada, "ask")
    assert "shop.buy" in ask["text"] and [a["name"] for a in ask["actions"]] == [
        "approve", "decline"
    ]  # fmt: skip
    await set_level(api, people.ada, "draft")
    agent = bearer(token(org=people.org, user=people.ada_id, act=f"agent:{people.ada_id}",
                         roles=("mod:write",)))  # fmt: skip
    wrote = await api.post("/v1/mod/layers/user", json={"base": 0, "ops": [HIDE_BOARD]},
                           headers=agent)  # fmt: skip
    assert wrote.status == 202, await wrote.text()
    (layer_draft,) = await _of_kind(api, people.ada, "layer_draft")
    assert layer_draft["detail"]["at_deadline"] == "expires"  # at draft, it waits for Keep

    items = await pending(api, people.ada)
    assert sorted(i["kind"] for i in items) == [
        "ask", "confirmation", "draft", "layer_draft", "window"
    ]  # fmt: skip
    # Soonest first: the window (an hour) before the ask (a day); no deadline last.
    kinds = [i["kind"] for i in items]
    assert kinds.index("window") < kinds.index("ask") < kinds.index("draft")

    # Each done from the list, by the action it names.
    sent = await _do(api, people.ada, draft, "send")
    assert sent["drafted_by"] == f"agent:{people.ada_id}"
    await _do(api, people.ada, confirmation, "decline")
    await _do(api, people.ada, window, "stop")
    approved = await _do(api, people.ada, ask, "approve")
    assert approved["state"] == "allowed"
    await _do(api, people.ada, layer_draft, "keep")
    assert await eventually(lambda: _empty(api, people.ada))


async def _empty(api, headers: dict) -> bool:
    return await pending(api, headers) == []


async def test_the_list_is_the_caller_s_own_and_no_agent_reads_it(api, operator, people):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Lunch?", to=people.ada_id)
    await _of_kind(api, people.ada, "draft")
    await ask_over_the_limit(api, people)
    await _of_kind(api, people.ada, "ask")
    for who in (people.bob, people.root, people.eve):
        assert await pending(api, who) == [], who
    assert await problem(await api.get("/v1/pending", headers=people.ada_agent)) == (
        403, "agent-may-not"
    )  # fmt: skip


async def test_the_stream_sends_the_list_at_once_and_again_when_it_changes(api, operator, people):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    events: asyncio.Queue[list[dict]] = asyncio.Queue()

    async def listen() -> None:
        response = await api.get("/v1/pending/stream", headers=people.ada)
        assert response.headers["Content-Type"].startswith("text/event-stream")
        event = None
        async for raw in response.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "pending":
                await events.put(json.loads(line.removeprefix("data: "))["items"])

    task = asyncio.create_task(listen())
    try:
        assert await asyncio.wait_for(events.get(), 10) == []
        await say(api, room, people.bob, "Are you in on Friday?", to=people.ada_id)
        (draft,) = await asyncio.wait_for(events.get(), 10)
        assert draft["kind"] == "draft"
        await ask_over_the_limit(api, people)
        items = await asyncio.wait_for(events.get(), 10)
        assert sorted(i["kind"] for i in items) == ["ask", "draft"]
        await _do(api, people.ada, draft, "discard")
        (left,) = await asyncio.wait_for(events.get(), 10)
        assert left["kind"] == "ask"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_stream_sends_no_list_again_whose_only_change_is_a_window_s_time_left(
    api, operator, people
):
    """A window's `seconds_left` differs at every read: a list read again with nothing else
    changed (a nudge that changed nothing, the stream's re-read every 30 s) was sent again
    while a window waited. The next event after such a read is the next change."""
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "send")
    await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    room = await room_with(api, people, people.bob_id)
    async with api.get("/v1/pending/stream", headers=people.ada) as stream:
        assert await _pending_event(stream) == []
        await say(api, room, people.bob, "Can you resend the invoice?", to=people.ada_id)
        while not (items := await _pending_event(stream)):
            pass
        assert [i["kind"] for i in items] == ["window"]
        # Nudged, the list is read again (its windows asked of the ladder): only the
        # window's seconds left differ. The next change is read after that read is done.
        asked = await operator.subscribe(ladder.WINDOWS.name)
        nudged = live_subject("ladder", "pending", people.org, key_token(people.ada_id))
        await operator.publish(nudged, b"")
        await asked.next_msg(timeout=10)
        await asked.unsubscribe()
        await say(api, room, people.bob, "And the receipt?", to=people.ada_id)
        assert [i["kind"] for i in await _pending_event(stream)] == ["window", "window"]


async def test_a_stream_whose_gateway_lost_the_bus_reads_the_list_again_once_back(
    client_for, gateway_settings, operator, people, api
):
    """A change made while the gateway was off the bus nudged no one it could hear: once
    back, its streams read the list again."""
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    link = Link(gateway_settings.nats_url)
    async with link as url:
        settings = msgspec.structs.replace(gateway_settings, nats_url=url)
        gateway = await client_for(settings, services=WHOLE)
        nc = gateway.server.app[NATS]
        async with gateway.get("/v1/pending/stream", headers=people.ada) as stream:
            assert await _pending_event(stream) == []
            link.cut()
            await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
            await say(api, room, people.bob, "Are you in on Friday?", to=people.ada_id)
            (draft,) = await _of_kind(api, people.ada, "draft")
            link.mend()
            assert await _pending_event(stream) == [draft]


async def _pending_event(stream) -> list[dict]:
    """The items of the stream's next `pending` event, keepalives passed over."""
    event = None
    async with asyncio.timeout(20):
        while True:
            line = (await stream.content.readline()).decode().rstrip("\n")
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "pending":
                return json.loads(line.removeprefix("data: "))["items"]


async def large_asks(api, people) -> None:
    """16 asks of ada's shopping agent (the most open to a person), each holding an
    envelope of 60 KB (an envelope may be 64 KiB): 960 KB, more than one page carries."""
    grant = valid_now(root_grant(people.ada_id))
    issued = await api.post("/v1/poa/grants", json={"grant": grant}, headers=people.ada)
    assert issued.status == 201, await issued.text()
    shopper = bearer(token(org=people.org, user=people.ada_id, act=SHOPPER))
    for i in range(OPEN_MOST):
        envelope = purchase(140)
        envelope["invocation"]["arguments"]["note"] = f"{i:02}" * 30_000
        acted = await api.post(
            "/v1/poa/grants/poa_8c21/acts", json={"envelope": envelope}, headers=shopper
        )
        assert acted.status == 202, await acted.text()


async def test_a_delegate_cannot_make_what_waits_on_its_person_unreadable(api, people):
    """An act's envelope is free-form up to 64 KiB, and its ask keeps it whole. The person
    is answered the oldest asks, as many as the bus carries, and told more wait."""
    await large_asks(api, people)
    asks = await api.get("/v1/poa/asks", headers=people.ada)
    assert asks.status == 200, await asks.text()
    listed = await asks.json()
    assert 0 < len(listed["asks"]) < OPEN_MOST and listed["more"] is True
    everything = await api.get("/v1/pending", headers=people.ada)
    assert everything.status == 200, await everything.text()
    waiting = await everything.json()
    assert [i["kind"] for i in waiting["items"]] == ["ask"] * len(listed["asks"])
    assert waiting["more"] is True


async def test_a_question_asked_of_a_person_waits_on_them_until_they_answer_it(api, people, stack):
    """Before, a question a colleague asked waited in its room alone: the list said
    nothing waited. Asked again after its answer (a retry that reaches the rooms once its
    key is forgotten), it is not listed again."""
    room = await room_with(api, people, people.bob_id)
    keyed = people.bob | {"Idempotency-Key": "lunch-question"}
    body = {
        "text": "Lunch on Friday or Monday?",
        "to": people.ada_id,
        "options": ["Friday", "Monday"],
    }
    asked = await api.post(f"/v1/rooms/{room['id']}/questions", json=body, headers=keyed)
    assert asked.status == 201, await asked.text()
    (question,) = await _of_kind(api, people.ada, "question")
    assert (question["room"], question["text"], question["candidates"]) == (
        room["id"], "Lunch on Friday or Monday?", ["Friday", "Monday"]
    )  # fmt: skip
    assert [a["name"] for a in question["actions"]] == ["pick 0", "pick 1", "edit", "decline"]
    assert question["detail"]["author"] == people.bob_id and "deadline" not in question
    assert await pending(api, people.bob) == []  # the asker waits on no one's list

    answer = await _do(api, people.ada, question, "pick 1")
    assert (answer["text"], answer["answers"]) == ("Monday", (await asked.json())["seq"])
    assert await eventually(lambda: _empty(api, people.ada))
    await forget_idempotency_key(stack.redis_url, "lunch-question")
    again = await api.post(f"/v1/rooms/{room['id']}/questions", json=body, headers=keyed)
    assert (await again.json())["seq"] == (await asked.json())["seq"]  # stored once
    assert await pending(api, people.ada) == []


async def test_a_manager_agents_question_waits_until_it_closes(api, people, connect):
    """A Chonk's question (a proposal for its decider's yes, an offered shift) takes an
    option or a decline, never other words, and is not listed once it closes."""
    closes = datetime.now(UTC) + timedelta(seconds=3)
    tell = rooms.Tell(
        org=people.org, person=people.ada_id, bot="chonk-ops", title="Chief Operating Orca",
        text="Can you take Thursday's late shift?", key="offer-thursday",
        options=("Yes, I'll take it", "No"), closes_at=closes,
    )  # fmt: skip
    async with connect("chonk") as nc:
        await call(nc, rooms.TELL, tell, caller="chonk")
    (question,) = await _of_kind(api, people.ada, "question")
    assert [a["name"] for a in question["actions"]] == ["pick 0", "pick 1", "decline"]
    assert datetime.fromisoformat(question["deadline"]) == closes
    assert question["detail"]["author"] == f"bot:{people.org}:chonk-ops"
    assert await eventually(lambda: _empty(api, people.ada))  # closed: not listed


async def test_a_question_waits_on_its_person_alone_and_their_agent_drafts_no_reply(
    api, operator, people
):
    """Before, the person's agent drafted a reply in words to a question asked of them:
    sent, it answered nothing, and the question and a draft both waited on their list."""
    await announce(operator, people.ada_id)

    async def has_agent() -> bool:
        return (await api.get("/v1/agents/me", headers=people.ada)).status == 200

    await eventually(has_agent)
    room = await room_with(api, people, people.bob_id)
    since = (await operator.jetstream().stream_info(EVENTS.name)).state.last_seq + 1
    body = {"text": "Standup at nine or ten?", "to": people.ada_id, "options": ["9", "10"]}
    asked = await api.post(f"/v1/rooms/{room['id']}/questions", json=body, headers=people.bob)
    assert asked.status == 201, await asked.text()
    event = await raised(operator, since, room["id"], (await asked.json())["seq"])
    assert msgspec.json.decode(event.data, type=rooms.MessageStored).answerer is None
    said = await say(api, room, people.bob, "And the notes?", to=people.ada_id)
    event = await raised(operator, since, room["id"], said["seq"])
    stored = msgspec.json.decode(event.data, type=rooms.MessageStored)
    assert stored.answerer == f"agent:{people.ada_id}"  # a message in words is answered
    (draft,) = await _of_kind(api, people.ada, "draft")
    assert draft["detail"]["reply_to"] == said["seq"]
    assert [i["kind"] for i in await pending(api, people.ada)].count("question") == 1


async def test_a_question_that_closes_centuries_from_now_waits_like_any_other(api, people, connect):
    """Found by the bus's edge fuzzer: a bot's question closing in the year 3093 failed the
    rooms' handler (a TTL past what the server can say), a 500."""
    far = datetime(3093, 4, 10, 16, 21, 31, tzinfo=UTC)
    tell = rooms.Tell(
        org=people.org, person=people.ada_id, bot="chonk-ops", title="Chief Operating Orca",
        text="Will you still be here?", key="offer-far", options=("Yes", "No"), closes_at=far,
    )  # fmt: skip
    async with connect("chonk") as nc:
        await call(nc, rooms.TELL, tell, caller="chonk")
    (question,) = await _of_kind(api, people.ada, "question")
    assert datetime.fromisoformat(question["deadline"]) == far


SIM = "sim-lanternfish"


async def ana_asks_for_a_packet(api, question: str) -> None:
    """Ana asks the Chief Human Officer `question` (a decision Tomás makes) and says yes to
    a packet for him."""
    ana = bearer(token(org=SIM, user=f"{SIM}/ana"))
    asked = {"chonk": "human", "text": f"{question} ({uuid.uuid4().hex[:6]})"}
    heard = await (await api.post("/v1/chonk/messages", json=asked, headers=ana)).json()
    offer = heard["delivered"][1]
    yes = {"choice": {"type": "pick", "option": 0}}
    path = f"/v1/rooms/{offer['room']}/questions/{offer['seq']}/answer"
    assert (await api.post(path, json=yes, headers=ana)).status == 201


async def test_a_packet_waits_on_its_decider_until_they_say_they_have_decided(whole_api):
    """§9: "Packet in Approvals; nothing happens until you say." Before, a HUMAN_ONLY
    packet was in no one's pending list, and nothing closed it."""
    org = SIM
    tomas = bearer(token(org=org, user=f"{org}/tomas"))
    await ana_asks_for_a_packet(whole_api, "Could I get a raise?")

    async def waiting() -> list[dict] | None:
        items = [i for i in await pending(whole_api, tomas) if i["kind"] == "packet"]
        return [i for i in items if i["detail"]["subject"] == f"{org}/ana"] or None

    (item,) = await eventually(waiting)
    assert item["text"].startswith("A question about compensation\n\nAna asked about")
    (decided,) = item["actions"]
    assert (decided["name"], decided["method"]) == ("decided", "POST")
    done = await whole_api.post(decided["path"], json=decided["body"], headers=tomas)
    assert done.status == 200, await done.text()
    assert item["id"] not in [i["id"] for i in await pending(whole_api, tomas)]
