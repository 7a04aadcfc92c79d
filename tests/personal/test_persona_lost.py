"""A persona put through the gateway, the agents replica's connection broken as it writes.

Its answer lost: the write was stored and its answer lost on the way back (the replica's
NATS node stalled, or its link): the persona stood, and the put was answered 503 and
recorded `agents.persona.put.failed`, a change made named in the trail as one that failed.
Now the write is asked again under one message id, stored once, and answered as made.
Preferences and an org's plan are written the same way.

Its reply lost: the service answered, but its connection broke as it did, and the server
carries no reply to a request from the connection after it. The gateway had answered 504
and held the key for the late reply, telling every retry 409 until the key's time in
flight ran out, a minute and more. Now a retry is asked of the service again, which runs a
key once and answers it as it did.

The break is made by a TCP proxy between the agents replica and its server (`Link`): it
keeps what the server sends back from the write on until after nats-py's wait (5 s), or
drops the write and cuts every connection through it for a second, so the write is asked
again on the new connection and the reply refused there."""

from collections.abc import Awaitable, Callable

import msgspec
import pytest
from aiohttp.test_utils import TestClient

from libs.audit.reading import records
from libs.contracts import agents
from services.agents.main import serve as serve_agents
from tests.personal.conftest import eventually
from tests.support import Link, history, serving_across_a_link

PERSONA_WRITE = b"PUB $KV.agents-personas."  # the write, not a read naming the key


@pytest.fixture
async def linked(settings_for, audit_service, model, client_for, gateway_settings):
    """The agents replica across a Link, and a gateway before it that waits the seconds
    given for its answer."""
    async with serving_across_a_link(
        agents.CONTRACT, settings_for("agents"), lambda svc: serve_agents(svc, model)
    ) as link:

        async def waiting(seconds: float) -> TestClient:
            settings = msgspec.structs.replace(gateway_settings, request_timeout=seconds)
            return await client_for(settings, services=(agents.CONTRACT,))

        yield waiting, link


Linked = tuple[Callable[[float], Awaitable[TestClient]], Link]


async def test_a_persona_put_whose_answer_was_lost_is_answered_and_recorded_as_made(
    linked: Linked, people, operator
):
    waiting, link = linked
    api = await waiting(30.0)
    persona = {"name": "cto", "description": "ours", "instructions": "Be brief."}
    link.deafen_at(PERSONA_WRITE, 6.5)
    r = await api.post("/v1/agents/personas", json={"persona": persona}, headers=people.root)

    assert r.status == 201, await r.text()
    listed = await (await api.get("/v1/agents/personas", headers=people.ada)).json()
    ours = [p for p in listed["personas"] if p["origin"] == "org"]
    assert [p["persona"]["description"] for p in ours] == ["ours"]
    personas = await operator.jetstream().key_value("agents-personas")
    assert len(await history(personas, f"{people.org}.cto")) == 1
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["agents.persona.put"]


async def test_a_retry_of_a_key_whose_reply_was_lost_is_answered_as_it_was(
    linked: Linked, people, operator
):
    waiting, link = linked
    api = await waiting(2.0)
    persona = {"name": "cto", "description": "ours", "instructions": "Be brief."}
    headers = {**people.root, "Idempotency-Key": "persona-cto"}
    link.cut_at(PERSONA_WRITE, 1.0)
    first = await api.post("/v1/agents/personas", json={"persona": persona}, headers=headers)
    assert first.status == 504, await first.text()
    statuses = []

    async def answered() -> dict | None:
        again = await api.post("/v1/agents/personas", json={"persona": persona}, headers=headers)
        statuses.append(again.status)
        return await again.json() if again.status == 201 else None

    made = await eventually(answered, timeout=30)
    assert made["persona"]["description"] == "ours"
    assert 409 not in statuses, statuses  # never told to wait out a reply that is lost
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["agents.persona.put"]
