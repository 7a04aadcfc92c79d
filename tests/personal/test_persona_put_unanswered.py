"""A persona put whose write was stored, and its answer lost on the way back (the agents
replica's NATS node stalled, or its link): the persona stood, and the put was answered 503
and recorded `agents.persona.put.failed`, a change made named in the trail as one that
failed. Now the write is asked again under one message id, stored once, and answered as
made. Preferences and an org's plan are written the same way.

The lost answer is made by a TCP proxy between the agents replica and its server (`Link`),
which keeps what the server sends back from the moment the replica writes the persona
until after nats-py's wait (5 s) has run out."""

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts import agents
from services.agents.main import serve as serve_agents
from tests.support import serving_across_a_link

PERSONA_WRITE = b"PUB $KV.agents-personas."  # the write, not a read naming the key


@pytest.fixture
async def linked(settings_for, audit_service, model, client_for, gateway_settings):
    """A gateway that waits for the agents service, whose connection crosses a Link."""
    async with serving_across_a_link(
        agents.CONTRACT, settings_for("agents"), lambda svc: serve_agents(svc, model)
    ) as link:
        waiting = msgspec.structs.replace(gateway_settings, request_timeout=30.0)
        yield await client_for(waiting, services=(agents.CONTRACT,)), link


async def test_a_persona_put_whose_answer_was_lost_is_answered_and_recorded_as_made(
    linked, people, operator
):
    api, link = linked
    persona = {"name": "cto", "description": "ours", "instructions": "Be brief."}
    link.deafen_at(PERSONA_WRITE, 6.5)
    r = await api.post("/v1/agents/personas", json={"persona": persona}, headers=people.root)

    assert r.status == 201, await r.text()
    listed = await (await api.get("/v1/agents/personas", headers=people.ada)).json()
    ours = [p for p in listed["personas"] if p["origin"] == "org"]
    assert [p["persona"]["description"] for p in ours] == ["ours"]
    history = await (await operator.jetstream().key_value("agents-personas")).history(
        f"{people.org}.cto"
    )
    assert len(history) == 1
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["agents.persona.put"]
