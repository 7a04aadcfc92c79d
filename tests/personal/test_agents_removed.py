"""hip-0524 §13: capacity caps what may exist. An org admin removes one of the org's own
agents or bots: it frees its place, answers nothing more, and its id may be made again.
Before, nothing removed one, so an org at its plan's capacity could never replace an agent
it no longer wanted."""

import asyncio
import secrets
import time
from datetime import UTC, datetime

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts import codec, poa, rooms
from libs.contracts.agents import AGENT_REMOVED, AGENTS_BUCKET, Agent, AgentRemoved, org_agent_key
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from services.gateway.tokens import mint
from tests.personal.conftest import SERVED, drafts, eventually, problem, room_with, say
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.support import KEY, bearer, org_agent, set_plan, token


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


@pytest.fixture
async def grants_api(client_for, gateway_settings, agents_service, rooms_service, poa_service):
    return await client_for(gateway_settings, services=(*SERVED, poa.CONTRACT))


async def test_the_grants_naming_a_removed_agent_are_revoked_and_its_asks_denied(
    grants_api, operator, people, acks
):
    """A Power-of-Action grant names its delegate by id. Removed, an org's agent acts no
    more, and the grants naming it stood: made again under its id, another agent acted on
    them. Each is now revoked as its person's revocation would revoke it, recorded as the
    admin's, with the asks still open under it denied and their questions withdrawn; a
    grant naming another stands."""
    api, org = grants_api, people.org
    cto = await org_agent(api, operator, org, people.root, "cto")

    async def issue(person: dict, user: str, grant_id: str, delegate: str) -> None:
        grant = valid_now(root_grant(user))
        grant["grant_id"], grant["delegate"]["sub"] = grant_id, delegate
        issued = await api.post("/v1/poa/grants", json={"grant": grant}, headers=person)
        assert issued.status == 201, await issued.text()

    await issue(people.ada, people.ada_id, "poa_ada_cto", cto)
    await issue(people.bob, people.bob_id, "poa_bob_cto", cto)
    await issue(people.ada, people.ada_id, "poa_ada_own", f"agent:{people.ada_id}")
    as_cto = bearer(token(org=org, user=people.ada_id, act=cto))
    asked = await api.post(
        "/v1/poa/grants/poa_ada_cto/acts", json={"envelope": purchase(140, cto)}, headers=as_cto
    )
    assert asked.status == 202, await asked.text()  # over the per-act limit: Ada is asked
    ask = (await asked.json())["ask"]

    assert (await remove(api, cto, people.root)).status == 200
    await acks.caught_up("EVENTS", "poa")

    async def revoked(person: dict, grant_id: str) -> bool:
        return (await (await api.get(f"/v1/poa/grants/{grant_id}", headers=person)).json())[
            "revoked"
        ]

    assert await revoked(people.ada, "poa_ada_cto") and await revoked(people.bob, "poa_bob_cto")
    assert not await revoked(people.ada, "poa_ada_own")
    found = await (await api.get(f"/v1/poa/asks/{ask}", headers=people.ada)).json()
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "revoked")
    # Its question in Ada's room is withdrawn by her agent, naming the admin: not declined
    # as hers, which she never did, and no answer of hers is taken after it.
    room, seq = found["room"], found["question_seq"]
    page = await (await api.get(f"/v1/rooms/{room}/messages", headers=people.ada)).json()
    [withdrawn] = [m for m in page["messages"] if m.get("reply_to") == seq]
    assert (withdrawn["author"], withdrawn.get("notice"), withdrawn.get("answers")) == (
        f"agent:{people.ada_id}",
        True,
        None,
    )
    assert f"{org}/root removed {cto}" in withdrawn["text"]
    assert [m for m in page["messages"] if m["author"] == people.ada_id] == []
    late = await api.post(
        f"/v1/rooms/{room}/questions/{seq}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=people.ada,
    )
    assert await problem(late) == (409, "already-answered")
    revocations = [
        r for r in await records(operator.jetstream(), org) if r.action == "poa.grant.revoke"
    ]
    assert sorted(r.target for r in revocations) == ["poa_ada_cto", "poa_bob_cto"]
    assert {(r.actor.sub, r.data["delegate_removed"]) for r in revocations} == {
        (f"{org}/root", cto)
    }

    # Made again under its id, it is another agent: the grants stay revoked.
    await org_agent(api, operator, org, people.root, "cto")
    again = bearer(token(org=org, user=people.ada_id, act=cto))
    acted = await api.post(
        "/v1/poa/grants/poa_ada_cto/acts", json={"envelope": purchase(40, cto)}, headers=again
    )
    decision = (await acted.json())["decision"]
    assert (decision["decision"], decision["rule_id"]) == ("DENY", "revoked")


async def _issued(api, person: dict, user: str, grant_id: str, delegate: str):
    grant = valid_now(root_grant(user))
    grant["grant_id"], grant["delegate"]["sub"] = grant_id, delegate
    return await api.post("/v1/poa/grants", json={"grant": grant}, headers=person)


async def test_a_grant_names_an_org_agent_only_while_it_stands(grants_api, operator, people):
    """A grant naming an org's agent or bot that was never made, or is removed, was taken,
    and became the agent's made later under its id: a typo in a delegate waited for its
    agent. It is refused now, as is one naming a delegate that could never act on it
    (another org's agent, another person's own), and nothing is stored."""
    api, org = grants_api, people.org
    await set_plan(operator, org, "team")
    cto = f"agent:{org}:cto"

    unmade = await _issued(api, people.ada, people.ada_id, "poa_unmade", cto)
    assert await problem(unmade) == (422, "delegate-not-standing")
    assert cto in (await unmade.json())["detail"]
    elsewhere = await _issued(api, people.ada, people.ada_id, "poa_other", "bot:other-org:cto")
    assert await problem(elsewhere) == (422, "delegate-of-another-org")
    # Another person's own agent acts for them alone: no grant of Ada's is ever its to act on.
    bobs = await _issued(api, people.ada, people.ada_id, "poa_bobs", f"agent:{people.bob_id}")
    assert await problem(bobs) == (422, "delegate-of-another-person")

    assert await org_agent(api, operator, org, people.root, "cto") == cto
    made = await _issued(api, people.ada, people.ada_id, "poa_made", cto)
    assert made.status == 201, await made.text()
    assert (await remove(api, cto, people.root)).status == 200
    removed = await _issued(api, people.ada, people.ada_id, "poa_removed", cto)
    assert await problem(removed) == (422, "delegate-not-standing")
    for refused in ("poa_unmade", "poa_other", "poa_bobs", "poa_removed"):
        found = await api.get(f"/v1/poa/grants/{refused}", headers=people.ada)
        assert found.status == 404, refused
    recorded = [
        (r.action, r.target)
        for r in await records(operator.jetstream(), org)
        if r.action.startswith("poa.grant.")
    ]
    assert recorded[0] == ("poa.grant.issue", "poa_made")
    assert {target for _, target in recorded} == {"poa_made"}


async def _members(api, room: dict, person: dict) -> set[str]:
    found = await (await api.get(f"/v1/rooms/{room['id']}", headers=person)).json()
    return {m["id"] for m in found["members"]}


async def test_a_removal_announced_and_not_yet_done_takes_nothing_away(
    grants_api, operator, people, acks
):
    """A removal is announced before its agent is deleted, and its grants were revoked as it
    was heard: a grant issued between the two could be stored after they were read and
    stand. They are read once the agent is gone now (and a grant stored meanwhile finds it
    gone), and its rooms left then. Announced and never done (cut short, never asked
    again), it revokes nothing and the bot stays in its rooms."""
    api, org = grants_api, people.org
    cto = await org_agent(api, operator, org, people.root, "cto", kind="bot")
    issued = await _issued(api, people.ada, people.ada_id, "poa_stands", cto)
    assert issued.status == 201, await issued.text()
    room = await room_with(api, people, people.bob_id, cto)
    js = operator.jetstream()
    agent = await (await api.get("/v1/agents", headers=people.root)).json()
    [made_at] = [a["created_at"] for a in agent["agents"] if a["id"] == cto]
    announced = AgentRemoved(
        org=org, agent=cto, by=Principal(org=org, sub=f"{org}/root"),
        made_at=datetime.fromisoformat(made_at),
    )  # fmt: skip
    stored = await js.publish(AGENT_REMOVED.name, codec.encode(announced))

    async def revoked() -> bool:
        found = await api.get("/v1/poa/grants/poa_stands", headers=people.ada)
        return (await found.json())["revoked"]

    await acks.tried("poa", stored)  # and handed back, to be read again
    await acks.tried("rooms", stored)
    assert not await revoked()
    assert cto in await _members(api, room, people.bob)

    assert (await remove(api, cto, people.root)).status == 200
    await acks.caught_up("EVENTS", "poa")  # the announcement by hand, read at last, too
    await acks.caught_up("EVENTS", "rooms")
    assert await revoked()
    assert cto not in await _members(api, room, people.bob)


async def test_a_removal_read_late_leaves_the_one_made_again_its_own_rooms_and_grants(
    grants_api, operator, people, acks
):
    """A removal read late (its reader behind, or delivered again) after a bot was made
    again under its id took the new one out of the rooms it was put in since, and revoked
    the grants issued to it since. Told when the removed one was made, its readers now
    take away only what was before the new one: the new rooms and grants stand."""
    api, org = grants_api, people.org
    cto = await org_agent(api, operator, org, people.root, "cto", kind="bot")
    before = await room_with(api, people, people.bob_id, cto)
    assert (await _issued(api, people.ada, people.ada_id, "poa_before", cto)).status == 201
    assert (await remove(api, cto, people.root)).status == 200
    await acks.caught_up("EVENTS", "rooms")
    await acks.caught_up("EVENTS", "poa")
    js = operator.jetstream()
    told = await js.get_last_msg("EVENTS", AGENT_REMOVED.name)
    removal = codec.decoder(AgentRemoved).decode(told.data)
    assert removal.made_at is not None

    assert await org_agent(api, operator, org, people.root, "cto", kind="bot") == cto
    since = await room_with(api, people, people.bob_id, cto)
    assert (await _issued(api, people.ada, people.ada_id, "poa_since", cto)).status == 201
    await js.publish(AGENT_REMOVED.name, told.data)  # the same removal, read again
    await acks.caught_up("EVENTS", "rooms")
    await acks.caught_up("EVENTS", "poa")

    assert cto not in await _members(api, before, people.bob)
    assert cto in await _members(api, since, people.bob)
    as_bot = bearer(token(org=org, user=f"{org}/root", act=cto))
    listed = await (await api.get("/v1/rooms", headers=as_bot)).json()
    assert [r["id"] for r in listed["rooms"]] == [since["id"]]
    grants_of = {
        grant_id: (await (await api.get(f"/v1/poa/grants/{grant_id}", headers=people.ada)).json())
        for grant_id in ("poa_before", "poa_since")
    }
    assert (grants_of["poa_before"]["revoked"], grants_of["poa_since"]["revoked"]) == (True, False)


async def test_a_removed_agents_token_costs_a_bus_read_only_up_to_its_rate(
    client_for, gateway_settings, agents_service, operator, people
):
    """Each request acting as an org's agent reads whether it stands, and that read came
    before the rate limit: a removed bot's token, sent on and on, cost the bus a read each,
    however fast. It is counted first now: past its rate, 429 and nothing read."""
    limited = msgspec.structs.replace(gateway_settings, rate_limit=3)
    api = await client_for(limited, services=SERVED)
    bot = await org_agent(api, operator, people.org, people.root, "cto", kind="bot")
    assert (await remove(api, bot, people.root)).status == 200
    its_key = f"$KV.agents.{org_agent_key(people.org, bot)}".encode()
    reads = []

    async def heard(msg) -> None:
        if its_key in msg.data:
            reads.append(msg)

    sub = await operator.subscribe("$JS.API.STREAM.MSG.GET.KV_agents", cb=heard)
    as_bot = bearer(token(org=people.org, user=f"{people.org}/root", act=bot))
    answers = [await problem(await api.get("/v1/rooms", headers=as_bot)) for _ in range(6)]
    # MCP alike: its requests and notifications counted first, its refusal in the session.
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    mcp = await (await api.post("/v1/mcp", json=ping, headers=as_bot)).json()
    told = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    notified = await api.post("/v1/mcp", json=told, headers=as_bot)
    await operator.flush()
    await sub.unsubscribe()
    assert answers == [(401, "act-not-standing")] * 3 + [(429, "rate-limited")] * 3
    assert mcp["error"]["data"]["type"] == "urn:tether:problem:rate-limited"
    assert notified.status == 202
    assert len(reads) == 3


async def test_a_removed_bot_leaves_its_rooms_and_one_made_again_reads_none_of_them(
    api, operator, people, acks
):
    """Made again under a removed bot's id, a bot listed the removed one's rooms and read
    their history: a room's members are ids. The removed one now leaves each room it was
    in, recorded as the admin's; the org's ambient agent, a member of every room by what
    it is, stays."""
    org = people.org
    bot = await org_agent(api, operator, org, people.root, "cto", kind="bot")
    ambient = await org_agent(api, operator, org, people.root, "self", ambient=True)
    room = await room_with(api, people, people.bob_id, bot)
    await say(api, room, people.bob, "The plans for Friday")
    assert (await remove(api, bot, people.root)).status == 200
    assert (await remove(api, ambient, people.root)).status == 200
    await acks.caught_up("EVENTS", "rooms")

    found = await (await api.get(f"/v1/rooms/{room['id']}", headers=people.bob)).json()
    assert {m["id"] for m in found["members"]} == {
        people.ada_id, people.bob_id, f"agent:{people.ada_id}", f"agent:{people.bob_id}", ambient
    }  # fmt: skip
    left = [
        r for r in await records(operator.jetstream(), org) if r.action == "rooms.member.remove"
    ]
    assert [(r.target, r.actor.sub, r.data["member"]) for r in left] == [
        (room["id"], f"{org}/root", bot)
    ]
    assert await org_agent(api, operator, org, people.root, "cto", kind="bot") == bot
    as_bot = bearer(token(org=org, user=f"{org}/root", act=bot))
    assert (await (await api.get("/v1/rooms", headers=as_bot)).json())["rooms"] == []
    history = await api.get(f"/v1/rooms/{room['id']}/messages", headers=as_bot)
    assert await problem(history) == (404, "room-not-found")


async def test_no_bot_an_org_makes_takes_a_chonks_name(api, operator, people):
    """A Chonk's bot is `bot:<org>:chonk-<id>` in the rooms it shares with each person. A
    persona named `chonk-ops` made a bot of that very id: a member of every such room, its
    token listed them and read what each person said to their Chonk. Refused now; an agent
    (not a bot) of that persona has an id of its own, and is made."""
    await set_plan(operator, people.org, "team")
    persona = {"name": "chonk-ops", "description": "Ours", "instructions": "Answer briefly."}
    added = await api.post("/v1/agents/personas", json={"persona": persona}, headers=people.root)
    assert added.status == 201, await added.text()
    bot = await api.post(
        "/v1/agents", json={"persona": "chonk-ops", "kind": "bot"}, headers=people.root
    )
    assert await problem(bot) == (422, "bot-name-reserved")
    assert f"bot:{people.org}:chonk-<id>" in (await bot.json())["detail"]
    agent = await api.post("/v1/agents", json={"persona": "chonk-ops"}, headers=people.root)
    assert agent.status == 201, await agent.text()
    assert await _listed(api, people) == [f"agent:{people.org}:chonk-ops"]


async def test_a_chonks_bot_an_org_made_before_the_name_was_kept_acts_by_no_token(
    api, operator, people, acks
):
    """An org's bot named `chonk-ops` made before the name was kept (3b3b737) stands under
    the very id of the Chonk `ops`'s bot: its token listed and read the room that Chonk
    shares with each person, and removing it took the Chonk out of each. No token acts as a
    Chonk's bot now, whatever stands under its id, and its removal leaves the Chonk's rooms
    as they are."""
    org = people.org
    chonks = f"bot:{org}:chonk-ops"
    made_before = Agent(
        id=chonks, org=org, kind="bot", persona="chonk-ops", created_at=datetime.now(UTC)
    )
    agents_kv = await operator.jetstream().key_value(AGENTS_BUCKET)
    await agents_kv.put(org_agent_key(org, chonks), codec.encode(made_before))
    said = rooms.Said(
        org=org, person=people.ada_id, bot="chonk-ops", title="Ops", text="Who is on today?",
        key=f"said-{secrets.token_hex(4)}",
    )  # fmt: skip
    thread = await call(operator, rooms.SAID, said, caller="chonk")

    as_bot = bearer(token(org=org, user=f"{org}/root", act=chonks))
    assert await problem(await api.get("/v1/rooms", headers=as_bot)) == (403, "act-reserved")
    read = await api.get(f"/v1/rooms/{thread.room}/messages", headers=as_bot)
    assert await problem(read) == (403, "act-reserved")

    removal = AgentRemoved(org=org, agent=chonks, by=Principal(org=org, sub=f"{org}/root"))
    await operator.jetstream().publish(AGENT_REMOVED.name, codec.encode(removal))
    await acks.caught_up("EVENTS", "rooms")
    found = await (await api.get(f"/v1/rooms/{thread.room}", headers=people.ada)).json()
    assert {m["id"] for m in found["members"]} == {people.ada_id, chonks}


async def test_a_question_withdrawn_takes_no_answer_and_one_answered_first_stands(
    api, operator, people
):
    """`tether.rooms.withdraw.poa`: the person's agent tells them, in the answer's place, that
    its question takes no answer now (the asking undone by someone else); asked again, the
    same notice. Answered first, the person's answer stands and the withdrawal is 409."""
    org, ada, mark = people.org, people.ada_id, secrets.token_hex(4)

    async def asked(key: str) -> rooms.Message:
        question = rooms.AskPerson(org=org, person=ada, text="May it buy this?",
                                   options=("Yes", "No"), key=f"{key}-{mark}")  # fmt: skip
        return await call(operator, rooms.ASK_PERSON, question, caller="poa")

    async def withdrawn(seq: int) -> rooms.Message:
        gone = rooms.Withdraw(org=org, person=ada, room=first.room, seq=seq, text="Withdrawn.")
        return await call(operator, rooms.WITHDRAW, gone, caller="poa")

    async def answer(seq: int):
        return await api.post(
            f"/v1/rooms/{first.room}/questions/{seq}/answer",
            json={"choice": {"type": "pick", "option": 0}},
            headers=people.ada,
        )

    first, second = await asked("first"), await asked("second")
    notice = await withdrawn(first.seq)
    assert (notice.author, notice.notice, notice.reply_to, notice.answers) == (
        f"agent:{ada}",
        True,
        first.seq,
        None,
    )
    assert (await withdrawn(first.seq)).seq == notice.seq
    assert await problem(await answer(first.seq)) == (409, "already-answered")

    assert (await answer(second.seq)).status == 201
    with pytest.raises(Refused) as refused:
        await withdrawn(second.seq)
    assert refused.value.problem.rule == "already-answered"
    with pytest.raises(Refused) as refused:
        await withdrawn(notice.seq)
    assert refused.value.problem.rule == "not-a-question"
