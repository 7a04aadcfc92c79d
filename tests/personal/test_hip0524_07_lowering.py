"""hip-0524 §16.7 and §9: lowering a level is immediate, needs no confirmation, and cancels
every window open under the old level before the call returns; at the window's end the
level is read again. Plus the race: 1,000 lowerings at the moment windows end."""

import asyncio
import random
import time
from collections import Counter
from datetime import datetime

import msgspec
import pytest

from libs.runtime.kv import current
from tests.personal.conftest import (
    announce,
    behind,
    eventually,
    history,
    room_with,
    route,
    say,
    set_level,
)
from tests.personal.test_hip0524_09_personal_line import connect, sms
from tests.support import bearer, set_plan, token

RACERS = 1000


@pytest.fixture
def ladder_clock():
    return behind(50)  # a one-minute window ends ten real seconds after it opens


async def _open_window(api, operator, people, room=None) -> tuple[dict, dict]:
    await announce(operator, people.ada_id)
    await eventually(lambda: _has_agent(api, people))
    await set_level(api, people.ada, "send")
    await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    room = room or await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Send me the deck?", to=people.ada_id)
    [window] = await eventually(lambda: _windows(api, people))
    return room, window


async def _timer(operator, window_id: str) -> dict:
    kv = await operator.jetstream().key_value("scheduler-timers")
    return msgspec.json.decode((await kv.get(f"ladder.w.{window_id}")).value)


@pytest.mark.parametrize(
    "lower",
    [("confirm", "default"), ("draft", "default"), ("confirm", "room")],
    ids=["default-to-confirm", "default-to-draft", "room-to-confirm"],
)
async def test_lowering_cancels_the_open_window_before_it_answers(api, operator, people, lower):
    room, window = await _open_window(api, operator, people)
    level, scope = lower
    changed = await set_level(
        api, people.ada, level, scope, room["id"] if scope == "room" else None
    )
    assert changed["canceled_windows"] == 1
    assert await _windows(api, people) == []
    assert (await _timer(operator, window["id"]))["state"] == "canceled"
    assert not [
        m
        for m in await history(api, room, people.bob)
        if m["author_kind"] == "agent" and not m.get("notice")
    ]


async def test_lowering_elsewhere_or_raising_cancels_nothing(api, operator, people):
    _, window = await _open_window(api, operator, people)
    elsewhere = await room_with(api, people, people.bob_id, title="elsewhere")
    other = await set_level(api, people.ada, "draft", "room", elsewhere["id"])
    assert other["canceled_windows"] == 0
    assert other["settings"]["rooms"] == {elsewhere["id"]: "draft"}
    assert [w["id"] for w in await _windows(api, people)] == [window["id"]]


async def test_lowering_a_lines_transport_cancels_its_windows(api, operator, people):
    await announce(operator, people.ada_id)
    await eventually(lambda: _has_agent(api, people))
    await set_level(api, people.ada, "send")
    await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    line = await connect(api, operator, people)
    await sms(api, line, "+14155550123", "first")  # first contact: asked, not sent
    await sms(api, line, "+14155550123", "second")  # recurrence: a window opens
    [window] = await eventually(lambda: _windows(api, people))
    changed = await set_level(api, people.ada, "confirm", "transport", "sms")
    assert (changed["canceled_windows"], await _windows(api, people)) == (1, [])
    assert window["state"] == "open"


async def test_an_org_ceiling_cancels_members_windows_above_it(api, operator, people):
    await _open_window(api, operator, people)
    lowered = await api.put("/v1/ladder/ceiling", json={"level": "confirm"}, headers=people.root)
    assert (await lowered.json())["canceled_windows"] == 1
    assert await _windows(api, people) == []


async def test_at_the_windows_end_the_level_is_read_again(api, operator, people, acks):
    """A lowering the window never heard of (the ceiling lowered by the operator's own
    hand, straight in the store) still stops the send at the fire."""
    room, window = await _open_window(api, operator, people)
    kv = await operator.jetstream().key_value("ladder")
    await kv.put(f"ceiling.{people.org}", b"draft")

    async def settled():
        return (await _timer(operator, window["id"]))["state"] == "fired"

    assert await eventually(settled, timeout=20)
    await acks.caught_up("TIMERS", "ladder")  # the fire handled: canceled at its end
    assert not [
        m
        for m in await history(api, room, people.bob)
        if m["author_kind"] == "agent" and not m.get("notice")
    ]


async def test_a_thousand_lowerings_at_the_moment_windows_end(api, operator, people, connect):
    """Each of a thousand people has one window and lowers their level from five seconds
    before its end to a second after. (A lowering sent 0.3 s before the end, as this test
    first did, was acknowledged before it only 10 to 24 times in a thousand on two cores;
    sent from 1.0 s or 2.0 s before, none was in some runs with three test processes on
    the two cores. Alone, from 5.0 s before, about a quarter are.)

    Every lowering acknowledged before its window's end means nothing left; a window
    ends in exactly one message or none, never two; and both outcomes happen."""
    # A thousand people of Bob's org, all in one room of it: a plan that holds them.
    await set_plan(operator, people.org, "enterprise")
    racers = [f"{people.org}/p{i}" for i in range(RACERS)]
    heads = {p: bearer(token(org=people.org, user=p)) for p in racers}
    created = await api.post(
        "/v1/rooms", json={"title": "race", "members": racers}, headers=people.bob
    )
    assert created.status == 201, await created.text()
    room = await created.json()
    asked = await say(api, room, people.bob, "Who is in?")
    limit = asyncio.Semaphore(50)

    async def prepare(person: str) -> None:
        async with limit:
            await set_level(api, heads[person], "send")
            await api.put("/v1/ladder/window", json={"window": "1m"}, headers=heads[person])

    await asyncio.gather(*(prepare(p) for p in racers))
    due: dict[str, datetime] = {}
    async with connect("agents") as nc:

        async def window_for(person: str) -> None:
            body = {
                "org": people.org,
                "person": person,
                "room": room["id"],
                "reply_to": asked["seq"],
                "candidates": [f"{person} is in"],
            }
            async with limit:
                routed = await route(nc, body, timeout=30)
            due[person] = datetime.fromisoformat(routed["due_at"])

        await asyncio.gather(*(window_for(p) for p in racers))

    acked: dict[str, tuple[float, int]] = {}

    async def lower(person: str) -> None:
        at = due[person].timestamp() + random.uniform(-5.0, 1.0)
        await asyncio.sleep(max(0.0, at - time.time()))
        for _ in range(5):  # a 503 or 504 on a busy machine is asked again, as a client would
            response = await api.put("/v1/ladder", json={"level": "confirm"}, headers=heads[person])
            if response.status < 500:
                break
        assert response.status == 200, await response.text()
        acked[person] = (time.time(), (await response.json())["canceled_windows"])

    await asyncio.gather(*(lower(p) for p in racers))
    ladder_kv = await operator.jetstream().key_value("ladder")

    states: Counter[str] = Counter()

    async def all_ended() -> bool:  # every window past its end: none open, none sending
        mine = f"window.{people.org}/p"
        held = [e for e in await current(ladder_kv, "window.*.*") if e.key.startswith(mine)]
        states.clear()
        states.update(msgspec.json.decode(e.value)["window"]["state"] for e in held)
        return len(held) >= RACERS and not {"open", "sending"} & set(states)

    try:
        await eventually(all_ended, timeout=120)  # a thousand fires, on a busy machine
    except AssertionError as exc:
        raise AssertionError(f"windows not all ended in 120 s: {dict(states)}") from exc
    sent: dict[str, list[dict]] = {}
    after = 0
    while True:
        page = await (
            await api.get(
                f"/v1/rooms/{room['id']}/messages",
                params={"after": after, "limit": 200},
                headers=people.bob,
            )
        ).json()
        for m in page["messages"]:
            if m["author_kind"] == "agent" and not m.get("notice"):
                sent.setdefault(m["on_behalf_of"], []).append(m)
        if page["next"] is None:
            break
        after = page["next"]

    early = [p for p in racers if acked[p][0] < due[p].timestamp()]
    assert early and [p for p in early if p in sent] == []
    assert [p for p in racers if acked[p][1] == 1 and p in sent] == []
    assert [p for p, found in sent.items() if len(found) != 1] == []
    print(f"{len(early)} lowered before their window's end; {len(sent)} windows sent")
    assert sent, "no window fired before its lowering: the race was not run"
    assert await current(ladder_kv, f"open.{people.org}.*.*") == []  # every one ended


async def _windows(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]


async def _has_agent(api, people) -> bool:
    return (await api.get("/v1/agents/me", headers=people.ada)).status == 200
