"""A keyed request whose reply was lost: its service answered, but its connection broke as
it did, and the server carries no reply to a request from the connection after it. The
gateway had answered 504 and held the key for the late reply, telling every retry 409
until the key's time in flight ran out, a minute and more. Now a retry is asked of the
service again, which runs a key once and answers it as it did.

The break is made by a TCP proxy between the agents replica and its server (`Link`), which
drops the replica's write of the persona and cuts every connection through it for a
second: the write is asked again on the new connection, and the reply refused there."""

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts import agents
from services.agents.main import serve as serve_agents
from tests.personal.conftest import eventually
from tests.support import serving_across_a_link

PERSONA_WRITE = b"PUB $KV.agents-personas."


@pytest.fixture
async def linked(settings_for, audit_service, model, client_for, gateway_settings):
    async with serving_across_a_link(
        agents.CONTRACT, settings_for("agents"), lambda svc: serve_agents(svc, model)
    ) as link:
        hasty = msgspec.structs.replace(gateway_settings, request_timeout=2.0)
        yield await client_for(hasty, services=(agents.CONTRACT,)), link


async def test_a_retry_of_a_key_whose_reply_was_lost_is_answered_as_it_was(
    linked, people, operator
):
    api, link = linked
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
