"""The agents and rooms services on the test stack, a gateway in front, and people.

Each test has a fresh org, so people and rooms never meet across tests. The model is the
built-in deterministic one, wrapped to keep every prompt it was shown.
"""

import asyncio
import contextlib
import dataclasses
import itertools
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy

from libs.contracts import agents, chonk, ladder, mod, poa, rooms, scheduler
from libs.contracts.accounts import ACCOUNT_CREATED, AccountCreated
from libs.contracts.ladder import SEND_MEANS
from libs.contracts.problem import PROBLEM_HEADER
from libs.model import Prompt, Scripted
from services.agents.domain.prompt import acknowledged
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.acks import SETTLES_S
from tests.support import LINES_KEY, Link, bearer, serving, serving_across_a_link, token


class Recorder(Scripted):
    """The built-in model, keeping what it was shown."""

    def __init__(self) -> None:
        super().__init__(acknowledged)
        self.prompts: list[Prompt] = []

    async def reply(self, prompt: Prompt) -> str:
        self.prompts.append(prompt)
        return await super().reply(prompt)


@pytest.fixture
def model() -> Recorder:
    return Recorder()


@pytest.fixture
async def linked_rooms(settings_for, audit_service) -> AsyncIterator[Link]:
    """The rooms, their connection across a Link: a module whose `rooms_service` is this
    breaks the rooms' network as it chooses."""
    async with serving_across_a_link(
        rooms.CONTRACT,
        settings_for("rooms"),
        lambda svc: serve_rooms(svc, Sealer.from_hex(LINES_KEY)),
    ) as link:
        yield link


SERVED = (agents.CONTRACT, rooms.CONTRACT, ladder.CONTRACT, scheduler.CONTRACT)
# And every service a person's pending list is gathered from.
WHOLE = (*SERVED, poa.CONTRACT, mod.CONTRACT, chonk.CONTRACT)


@pytest.fixture
async def api(
    client_for, gateway_settings, agents_service, rooms_service, ladder_service, scheduler_service
):
    return await client_for(gateway_settings, services=SERVED)


@pytest.fixture
async def whole_api(
    client_for,
    gateway_settings,
    agents_service,
    rooms_service,
    ladder_service,
    scheduler_service,
    poa_service,
    mod_service,
    chonk_service,
):
    """The gateway before every service a person's pending list is gathered from."""
    return await client_for(gateway_settings, services=WHOLE)


class People(msgspec.Struct):
    """Tokens of a fresh org: ada and bob are members, root its admin, eve another org's
    member; `ada_agent` is ada's own agent acting for her."""

    org: str
    ada: dict[str, str]
    bob: dict[str, str]
    root: dict[str, str]
    eve: dict[str, str]
    ada_agent: dict[str, str]

    @property
    def ada_id(self) -> str:
        return f"{self.org}/ada"

    @property
    def bob_id(self) -> str:
        return f"{self.org}/bob"


@pytest.fixture
def people(org) -> People:
    other = f"{org}-x"
    return People(
        org=org,
        ada=bearer(token(org=org, user=f"{org}/ada")),
        bob=bearer(token(org=org, user=f"{org}/bob")),
        root=bearer(token(org=org, user=f"{org}/root", roles=("admin",))),
        eve=bearer(token(org=other, user=f"{other}/eve", roles=("admin",))),
        ada_agent=bearer(token(org=org, user=f"{org}/ada", act=f"agent:{org}/ada")),
    )


async def announce(operator, *users: str) -> None:
    """Accounts made, as the identity provider announces them."""
    js = operator.jetstream()
    for user in users:
        body = msgspec.json.encode(AccountCreated(user=user))
        await js.publish(ACCOUNT_CREATED.name, body)


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = SETTLES_S) -> Any:
    """`check()`'s first truthy result, polled until `timeout`: one that never comes fails
    the test there, not at whatever assertion happens to follow."""
    deadline = time.monotonic() + timeout
    while not (result := await check()):
        assert time.monotonic() < deadline, f"{check.__qualname__} did not hold in {timeout} s"
        await asyncio.sleep(0.05)
    return result


async def problem(response) -> tuple[int, str]:
    """The status and rule of a refusal; a response that is none is the status and its body,
    so that an assertion expecting a refusal shows what came instead."""
    body = await response.json(content_type=None)
    if not isinstance(body, dict) or "type" not in body:
        return response.status, str(body)[:300]
    return response.status, body["type"].rsplit(":", 1)[-1]


async def room_with(api, people: People, *members: str, title: str = "team") -> dict:
    response = await api.post(
        "/v1/rooms", json={"title": title, "members": list(members)}, headers=people.ada
    )
    assert response.status == 201, await response.text()
    return await response.json()


async def say(api, room: dict, headers: dict, text: str, **fields: Any) -> dict:
    response = await api.post(
        f"/v1/rooms/{room['id']}/messages", json={"text": text, **fields}, headers=headers
    )
    assert response.status == 201, await response.text()
    return await response.json()


async def pending_send(api, people, operator) -> tuple[dict, dict]:
    """A room where Bob asked Ada, and her agent's reply waiting out a 15 m window."""
    await announce(operator, people.ada_id)

    async def has_agent():
        return (await api.get("/v1/agents/me", headers=people.ada)).status == 200

    await eventually(has_agent)
    await set_level(api, people.ada, "send")
    changed = await api.put("/v1/ladder/window", json={"window": "15m"}, headers=people.ada)
    assert changed.status == 200, await changed.text()
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Can we move the call?", to=people.ada_id)

    async def windows():
        return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]

    [window] = await eventually(windows)
    return room, window


async def route(nc, reply: dict[str, Any], *, timeout: float = 10) -> dict:
    """What the ladder made of an agent's `reply`, routed on the bus as the agents service
    routes it. A transient answer (a 5xx problem, or none in time) is asked again, as that
    service's reader asks again; the route is keyed by the reply, so it is made once."""
    for _ in range(5):
        try:
            answer = await nc.request(
                ladder.ROUTE.published_by("agents"), msgspec.json.encode(reply), timeout=timeout
            )
        except TimeoutError:
            continue
        status = int((answer.headers or {}).get(PROBLEM_HEADER, 0))
        if status < 500:
            routed = msgspec.json.decode(answer.data)
            assert not status, routed
            return routed
    raise AssertionError(f"the route of {reply} was transient five times")


async def confirmation_asked(api, people, operator) -> tuple[dict, dict]:
    """A room where Bob asked Ada, and her agent's confirmation of its reply (at confirm)."""
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "confirm")
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Lunch on Friday?", to=people.ada_id)

    async def confirmations():
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return listed["confirmations"]

    [confirmation] = await eventually(confirmations)
    return room, confirmation


async def drafts(api, room: dict, headers: dict) -> list[dict]:
    response = await api.get(f"/v1/rooms/{room['id']}/drafts", headers=headers)
    assert response.status == 200, await response.text()
    return (await response.json())["drafts"]


def fresh_number() -> str:
    """An E.164 number no other test has connected."""
    return f"+1555{secrets.randbelow(10**7):07d}"


async def set_level(
    api,
    headers: dict,
    level: str | None,
    scope: str = "default",
    target: str | None = None,
    *,
    status: int = 200,
) -> dict:
    """Change a level; `send`, and unsetting (which may uncover send), come with the
    acknowledgement that raising to send needs."""
    body: dict[str, Any] = {"level": level, "scope": scope, "target": target}
    if level in ("send", None):
        body["acknowledge"] = SEND_MEANS
    response = await api.put("/v1/ladder", json=body, headers=headers)
    assert response.status == status, await response.text()
    return await response.json(content_type=None)


async def history(api, room: dict, headers: dict) -> list[dict]:
    response = await api.get(f"/v1/rooms/{room['id']}/messages", headers=headers)
    assert response.status == 200, await response.text()
    return (await response.json())["messages"]


def behind(seconds: float) -> Callable[[], datetime]:
    """A clock `seconds` behind: a one-minute window ends 60 - `seconds` real seconds on."""
    return lambda: datetime.now(UTC) - timedelta(seconds=seconds)


@contextlib.asynccontextmanager
async def an_hour_on(js) -> AsyncIterator[None]:
    """The ROOMS stream recognising message ids for one second, until the block ends, as
    if an hour had passed: it is entered once a probe's id, new to this block and published
    after every id before it, is taken as new when published again (the server forgets ids
    oldest first, on a timer)."""
    config = (await js.stream_info(rooms.ROOMS.name)).config
    shorter = (dataclasses.replace(config, duplicate_window=w) for w in itertools.cycle((1.0, 0.9)))
    await js.update_stream(next(shorter))
    try:
        probe, msg_id = "rooms.outbound.probe.forgetting", {"Nats-Msg-Id": secrets.token_hex(8)}
        await js.publish(probe, b"", headers=msg_id)
        armed = time.monotonic()

        async def forgotten() -> bool:
            nonlocal armed
            if not (await js.publish(probe, b"", headers=msg_id)).duplicate:
                return True
            # A change of window sets the server's sweep off at once. Once in a whole
            # suite's run the sweep did not come within 30 s of the first change, so the
            # change is made again until it does.
            if time.monotonic() - armed > 3:
                await js.update_stream(next(shorter))
                armed = time.monotonic()
            return False

        await eventually(forgotten, timeout=30)
        yield
    finally:
        await js.update_stream(config)


@pytest.fixture
def rooms_up(settings_for):
    """rooms_up(): rooms serving until the block ends (and stopped, drained, with it)."""
    return lambda: serving(
        rooms.CONTRACT,
        settings_for("rooms"),
        lambda svc: serve_rooms(svc, Sealer.from_hex(LINES_KEY)),
    )


async def raised(operator, since: int, room: str, seq: int) -> Msg:
    """The event the rooms service raised for message `seq` of `room` (on EVENTS from
    sequence `since`), with its headers: what the agents service reads to answer it, a
    definite record of whether anyone will."""
    sub = await operator.jetstream().subscribe(
        rooms.MESSAGE_STORED.name,
        ordered_consumer=True,
        config=ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=since),
    )
    try:
        while True:
            event = await sub.next_msg(timeout=10)
            stored = msgspec.json.decode(event.data, type=rooms.MessageStored)
            if (stored.room, stored.seq) == (room, seq):
                return event
    finally:
        await sub.unsubscribe()
