"""hip-0524 §13: capacity caps what may exist. An org admin removes one of the org's own
agents or bots: it frees its place, answers nothing more, and its id may be made again.
Before, nothing removed one, so an org at its plan's capacity could never replace an agent
it no longer wanted."""

import asyncio
import time

from libs.audit.reading import records
from services.gateway.tokens import mint
from tests.personal.conftest import drafts, eventually, problem, room_with, say
from tests.support import KEY, bearer, set_plan, token


async def remove(api, agent_id: str, headers: dict):
    return await api.post(f"/v1/agents/{agent_id}/remove", json={}, headers=headers)


async def _capacity(api, people) -> dict:
    return (await (await api.get("/v1/billing", headers=people.root)).json())["capacity"]


async def _listed(api, people) -> list[str]:
    page = await (await api.get("/v1/agents", headers=people.root)).json()
    return [a["id"] for a in page["agents"]]


async def test_a_removed_agent_frees_its_place_and_its_id_may_be_made_again(api, operator, people):
    await set_plan(operator, people.org, "pro")  # 3 agents, 1 bot
    for persona in ("cto", "dev", "des"):
        made = await api.post("/v1/agents", json={"persona": persona}, headers=people.root)
        assert made.status == 201, await made.text()
    full = await api.post("/v1/agents", json={"persona": "researcher"}, headers=people.root)
    assert await problem(full) == (409, "over-capacity")

    cto = f"agent:{people.org}:cto"
    removed = await remove(api, cto, people.root)
    assert removed.status == 200, await removed.text()
    assert (await removed.json())["id"] == cto
    (record,) = [
        r for r in await records(operator.jetstream(), people.org)
        if r.action == "agents.org.remove"
    ]  # fmt: skip
    assert (record.target, record.actor.sub) == (cto, f"{people.org}/root")
    assert await _listed(api, people) == [f"agent:{people.org}:des", f"agent:{people.org}:dev"]
    assert (await _capacity(api, people))["agents"] == {"allowed": 3, "in_use": 2}
    again = await remove(api, cto, people.root)
    assert await problem(again) == (404, "agent-not-found")

    made = await api.post("/v1/agents", json={"persona": "researcher"}, headers=people.root)
    assert made.status == 201, await made.text()
    assert (await _capacity(api, people))["agents"] == {"allowed": 3, "in_use": 3}
    # The id removed is made again over its removal, once.
    dev = await remove(api, f"agent:{people.org}:dev", people.root)
    assert dev.status == 200, await dev.text()
    remade = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert remade.status == 201, await remade.text()
    twice = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert await problem(twice) == (409, "agent-exists")
    assert cto in await _listed(api, people)
    assert (await _capacity(api, people))["agents"] == {"allowed": 3, "in_use": 3}


async def test_a_removed_ambient_agent_answers_nothing_more(api, operator, people, acks):
    await set_plan(operator, people.org, "team")
    made = await api.post(
        "/v1/agents", json={"persona": "self", "ambient": True}, headers=people.root
    )
    assert made.status == 201, await made.text()
    room = await room_with(api, people, people.bob_id, f"{people.org}/root")
    await say(api, room, people.bob, "Who handles expense reports?", to="org")
    [first] = await eventually(lambda: drafts(api, room, people.root))

    removed = await remove(api, f"agent:{people.org}", people.root)
    assert removed.status == 200, await removed.text()
    await say(api, room, people.bob, "And who approves travel?", to="org")
    await acks.caught_up("EVENTS", "agents")  # the message read, and answered by no one
    assert [d["id"] for d in await drafts(api, room, people.root)] == [first["id"]]


async def test_only_an_admin_of_the_org_removes_and_never_a_persons_own_agent(
    api, operator, people
):
    await set_plan(operator, people.org, "pro")
    made = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert made.status == 201, await made.text()
    cto = f"agent:{people.org}:cto"
    assert await problem(await remove(api, cto, people.ada)) == (403, "admin-only")
    root = f"{people.org}/root"
    agent = bearer(token(org=people.org, user=root, roles=("admin",), act=f"agent:{root}"))
    assert (await remove(api, cto, agent)).status == 403
    elsewhere = bearer(token(org="other-org", user="other-org/root", roles=("admin",)))
    assert await problem(await remove(api, cto, elsewhere)) == (404, "agent-not-found")
    # A person's agent is theirs, one per person: no org agent has its id.
    plain = await remove(api, f"agent:{people.ada_id}", people.root)
    assert plain.status == 404  # no route has two segments there
    encoded = await remove(api, f"agent:{people.org}%2Fada", people.root)
    assert await problem(encoded) == (422, "invalid-request")
    assert "$.id" in (await encoded.json())["detail"]
    assert cto in await _listed(api, people)
    # The id is one segment of its own: no other route of /v1/agents/… is taken for one.
    for sibling in ("me", "personas"):
        assert (await remove(api, sibling, people.root)).status == 422, sibling


async def test_a_token_acts_as_an_org_agent_only_while_it_stands_and_once_it_was_made(
    api, operator, people
):
    """A token is verified by its signature, and an org agent's outlived the agent: removed,
    its tokens still acted as it until they expired, and the tokens of the one removed
    acted as the one made again under its id. Now each request acting as an org's agent or
    bot reads whether it stands, through the REST routes and MCP alike."""
    await set_plan(operator, people.org, "pro")
    cto = f"agent:{people.org}:cto"

    def acting(issued: int | None = None) -> dict:
        now = int(time.time()) if issued is None else issued
        return bearer(mint(KEY, org=people.org, user=f"{people.org}/root", act=cto, now=now))

    unmade = await api.get("/v1/rooms", headers=acting())
    assert await problem(unmade) == (401, "act-not-standing")
    made = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert made.status == 201, await made.text()
    first = acting()
    assert (await api.get("/v1/rooms", headers=first)).status == 200
    from_before = await api.get("/v1/rooms", headers=acting(int(time.time()) - 3600))
    assert await problem(from_before) == (401, "token-revoked")

    assert (await remove(api, cto, people.root)).status == 200
    # Refused from the moment the admin is told, over REST and MCP alike.
    assert await problem(await api.get("/v1/rooms", headers=first)) == (401, "act-not-standing")
    mcp = await api.post(
        "/v1/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=first
    )
    assert await problem(mcp) == (401, "act-not-standing")

    await asyncio.sleep(1.01 - time.time() % 1)  # the next second, which `iat` can tell apart
    again = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert again.status == 201, await again.text()
    assert (await api.get("/v1/rooms", headers=acting())).status == 200
    old = await api.get("/v1/rooms", headers=first)
    assert (old.status, (await old.json())["detail"]) == (
        401,
        f"the token was issued before {cto} was made: it acted as one removed since",
    )
