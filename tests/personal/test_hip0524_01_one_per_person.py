"""hip-0524 §16.1: every human principal has exactly one personal agent, made when the
account is, and no path creates a second."""

import asyncio

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts import agents
from libs.contracts.accounts import ACCOUNT_CREATED, AccountCreated
from services.agents.main import serve as serve_agents
from tests.personal.conftest import announce, eventually, problem
from tests.support import bearer, serving, token


async def _mine(api, headers):
    response = await api.get("/v1/agents/me", headers=headers)
    return await response.json() if response.status == 200 else None


async def test_an_account_made_gets_its_agent_at_once(api, operator, people):
    await announce(operator, people.ada_id)
    mine = await eventually(lambda: _mine(api, people.ada))
    assert mine["agent"] == {
        "id": f"agent:{people.ada_id}",
        "org": people.org,
        "kind": "personal",
        "persona": "self",
        "created_at": mine["agent"]["created_at"],
        "user": people.ada_id,
        "ambient": False,
    }
    assert mine["persona"]["name"] == "self"


async def test_the_same_event_many_times_on_two_replicas_makes_one_agent(
    api, operator, people, settings_for, model, acks
):
    async with serving(
        agents.CONTRACT, settings_for("agents", "r2"), lambda svc: serve_agents(svc, model)
    ):
        await asyncio.gather(*(announce(operator, people.ada_id) for _ in range(20)))
        first = await eventually(lambda: _mine(api, people.ada))
        await acks.caught_up("EVENTS", "agents")  # every repeat handled
    again = await _mine(api, people.ada)
    assert again == first
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"]["personal_agents"] == 1
    # one record of the one change: a copy that lost its race says so (issue 11.4)
    found = await records(operator.jetstream(), people.org)
    made = [r.n for r in found if r.action == "agents.personal.create"]
    lost = [r.data["record"] for r in found if r.action == "agents.personal.create.failed"]
    assert len(set(made) - set(lost)) == 1


async def test_no_path_creates_a_second(api, operator, people):
    await announce(operator, people.ada_id)
    await eventually(lambda: _mine(api, people.ada))
    for persona in ("self", "cto"):
        response = await api.post("/v1/agents/me", json={"persona": persona}, headers=people.ada)
        assert await problem(response) == (409, "agent-exists")
    response = await api.post("/v1/agents/me", json={}, headers=people.ada_agent)
    assert await problem(response) == (403, "agent-may-not")


async def test_a_person_without_an_agent_yet_can_make_it_from_a_persona_in_one_call(api, people):
    response = await api.post("/v1/agents/me", json={"persona": "cto"}, headers=people.bob)
    assert response.status == 201, await response.text()
    assert response.headers["Location"] == "/v1/agents/me"
    made = await response.json()
    assert (made["agent"]["persona"], made["persona"]["name"]) == ("cto", "cto")
    assert (await _mine(api, people.bob))["agent"] == made["agent"]


async def test_a_principal_with_no_org_is_refused_never_defaulted(api, people):
    no_org = bearer(token(org=None, user="ada"))
    response = await api.get("/v1/agents/me", headers=no_org)
    assert await problem(response) == (403, "token-without-org")
    not_a_person = bearer(token(org=people.org, user="ada"))  # no <home org>/ half
    for method, path in (("GET", "/v1/agents/me"), ("POST", "/v1/agents/me")):
        response = await api.request(method, path, json={}, headers=not_a_person)
        assert await problem(response) == (403, "no-home-org")


async def test_an_account_without_a_home_org_gets_no_agent_and_does_not_stall_the_reader(
    api, operator, people
):
    js = operator.jetstream()
    await js.publish("tether.evt.accounts.account.created", b'{"user": "no-home"}')
    await announce(operator, people.bob_id)  # read after the refused one
    assert await eventually(lambda: _mine(api, people.bob))


@pytest.mark.parametrize("hidden", ["\u202e", "\u200b", "\x85"], ids=["bidi", "zero-width", "C1"])
async def test_an_account_whose_id_hides_a_character_gets_no_agent(
    api, operator, people, acks, hidden
):
    """A person id is a token's `sub`, which is printable: an account announced as
    `<org>/<hidden>ada` is no one who could sign in (and, shown, would read as another
    name). Before, it was given an agent all the same."""
    body = msgspec.json.encode(AccountCreated(user=f"{people.org}/{hidden}ada"))
    stored = await operator.jetstream().publish(ACCOUNT_CREATED.name, body)
    await acks.done("agents", stored)  # read, and refused
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"]["personal_agents"] == 0
