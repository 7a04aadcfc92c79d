"""hip-0524 §16.11 and §13: no plan limit and no hourly rate is written anywhere but the
catalog; capacity refuses, runtime bills, and neither does the other's job; provisioning
never needs a balance."""

import asyncio
import contextlib
import json
import subprocess
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from importlib.resources import files
from pathlib import Path

import nats
import pytest

from libs.audit.reading import records
from libs.contracts import codec
from libs.contracts.agents import CreateAgent, RunEnded
from libs.contracts.permissions import OPERATOR, inbox_prefix
from libs.contracts.rooms import ROOMS
from libs.contracts.streams import DEAD, EVENTS
from libs.runtime.kv import current
from libs.runtime.service import ensure_shared_streams, ensure_stream
from libs.stack.processes import stop_all
from libs.stack.servers import free_port, start_nats
from services.agents.domain import meter, roster
from services.agents.domain.catalog import load_catalog
from tests.personal.conftest import announce, eventually, problem
from tests.support import bearer, module_process, set_plan, token

ROOT = Path(__file__).resolve().parents[2]
CATALOG = files("services.agents").joinpath("catalog.json")


def test_the_rate_is_written_in_the_catalog_alone():
    rate = json.loads(CATALOG.read_bytes())["runtime"]["agent_hour_usd"]
    sources = [
        p
        for top in ("libs", "services", "deploy", "bench")
        for p in (ROOT / top).rglob("*")
        if p.is_file() and p.suffix in (".py", ".json", ".yaml", ".md") and p.name != "catalog.json"
    ]
    assert sources
    assert [str(p) for p in sources if rate in p.read_text()] == []


def test_the_catalog_refuses_what_it_cannot_mean():
    good = json.loads(CATALOG.read_bytes())
    for broken, why in (
        ({**good, "plans": {"pro": good["plans"]["pro"]}}, "free"),
        ({**good, "runtime": {"agent_hour_usd": "-1"}}, "negative"),
        ({**good, "seats": {}}, "seats"),
    ):
        with pytest.raises(Exception, match=why):
            load_catalog(json.dumps(broken).encode())


def test_an_id_admitted_anew_while_it_is_let_go_stays():
    """A create sent again admits its id anew before it stores the agent: a release decided
    on the roster as it was read before then lets that id stay."""
    pro = load_catalog(CATALOG.read_bytes()).plans["pro"]
    at = datetime(2026, 12, 5, tzinfo=UTC)
    cto = roster.org_agent("acme", CreateAgent(persona="cto"), at)
    held = roster.admit(roster.Roster(), cto, pro, "pro", at)
    later = at + roster.SETTLES_WITHIN + timedelta(seconds=1)
    assert roster.unsettled(held, later) == (cto.id,)
    assert roster.released(held, (cto.id,), later).agents == ()
    again = roster.admit(held, cto, pro, "pro", later)
    assert again.agents == (cto.id,) and roster.unsettled(again, later) == ()
    assert roster.released(again, (cto.id,), later) == again


def test_an_agent_removed_leaves_the_roster_unless_admitted_or_stored_again_since():
    pro = load_catalog(CATALOG.read_bytes()).plans["pro"]
    at = datetime(2026, 12, 5, tzinfo=UTC)
    cto = roster.org_agent("acme", CreateAgent(persona="cto"), at)
    held = roster.admit(roster.Roster(), cto, pro, "pro", at)
    later = at + timedelta(days=1)
    assert roster.removed(held, cto.id, later, stored_again=False) == roster.Roster()
    made_again = roster.admit(held, cto, pro, "pro", later)  # as it was being removed
    assert roster.removed(made_again, cto.id, later, stored_again=False) == made_again
    assert roster.removed(held, cto.id, later, stored_again=True) == held
    assert roster.removed(held, "agent:acme:dev", later, stored_again=False) == held


def test_a_run_bills_each_started_second_at_the_one_rate():
    def run(ms: int) -> RunEnded:
        start = datetime(2026, 11, 30, tzinfo=UTC)
        return RunEnded(
            run="r",
            org="o",
            agent="a",
            kind="bot",
            user=None,
            started_at=start,
            ended_at=start + timedelta(milliseconds=ms),
        )

    assert [meter.billed_seconds(run(ms)) for ms in (0, 5, 1000, 1001, 59_999)] == [1, 1, 1, 2, 60]
    counted = meter.record(None, run(1500), seq=7)
    assert meter.record(counted, run(1500), seq=7) is counted  # a redelivery counts once
    assert (counted.agent, counted.runs, counted.seconds) == ("a", 1, 2)
    assert meter.record(counted, run(0), seq=9).seconds == 3
    assert meter.amount(3600, Decimal("0.12")) == Decimal("0.120000")


async def test_capacity_refuses_and_provisioning_needs_no_balance(api, operator, people):
    await announce(operator, people.ada_id)
    assert await eventually(lambda: _status(api, people.ada, 200))  # free plan, no balance
    response = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert await problem(response) == (409, "over-capacity")
    assert "plan free allows 0 agents" in (await response.json())["detail"]

    await set_plan(operator, people.org, "pro")  # 3 agents, 1 bot
    for persona in ("cto", "dev", "des"):
        response = await api.post("/v1/agents", json={"persona": persona}, headers=people.root)
        assert response.status == 201, await response.text()
    response = await api.post("/v1/agents", json={"persona": "researcher"}, headers=people.root)
    assert await problem(response) == (409, "over-capacity")
    bot = {"persona": "marketer", "kind": "bot"}
    assert (await api.post("/v1/agents", json=bot, headers=people.root)).status == 201
    again = await api.post(
        "/v1/agents", json={"persona": "dev", "kind": "bot"}, headers=people.root
    )
    assert await problem(again) == (409, "over-capacity")
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"] == {
        "personal_agents": 1,
        "agents": {"allowed": 3, "in_use": 3},
        "bots": {"allowed": 1, "in_use": 1},
    }
    assert bill["seconds"] == 0 and bill["amount_usd"] == "0.000000"  # existing costs nothing


async def test_a_create_cut_short_before_its_agent_was_stored_is_finished_by_the_next(
    api, operator, people
):
    """A replica that died between admitting the agent onto the roster and storing it left
    the id on the roster alone: the create sent again makes the agent, counted once."""
    await set_plan(operator, people.org, "pro")
    kv = await operator.jetstream().key_value("agents")
    await kv.put(
        f"roster.{people.org}", json.dumps({"agents": [f"agent:{people.org}:cto"]}).encode()
    )
    response = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert response.status == 201, await response.text()
    again = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert await problem(again) == (409, "agent-exists")
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"]["agents"] == {"allowed": 3, "in_use": 1}


async def test_the_ids_creates_cut_short_left_on_a_full_roster_are_let_go(api, operator, people):
    """Creates cut short after admitting their agents (a replica killed, the store away at
    the write), never sent again, left three ids on the roster: the org's capacity was
    used up for good. A create that finds the roster full lets go of each one admitted
    longer ago than a create takes whose agent was never stored, recorded, and is made;
    one admitted a moment ago (its create still storing it) is not let go."""
    await set_plan(operator, people.org, "pro")  # 3 agents
    kv = await operator.jetstream().key_value("agents")
    left = [f"agent:{people.org}:{p}" for p in ("cto", "dev", "des")]
    await kv.put(f"roster.{people.org}", json.dumps({"agents": left}).encode())
    made = await api.post("/v1/agents", json={"persona": "researcher"}, headers=people.root)
    assert made.status == 201, await made.text()
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"]["agents"] == {"allowed": 3, "in_use": 1}
    released = [r for r in await records(operator.jetstream(), people.org)
                if r.action == "agents.roster.release"]  # fmt: skip
    assert [r.data["ids"] for r in released] == [left] and released[0].actor is None

    just_now = datetime.now(UTC).isoformat()
    storing = [f"agent:{people.org}:{p}" for p in ("cto", "dev")]
    roster = {"agents": [f"agent:{people.org}:researcher", *storing],
              "admitted": dict.fromkeys(storing, just_now)}  # fmt: skip
    await kv.put(f"roster.{people.org}", json.dumps(roster).encode())
    refused = await api.post("/v1/agents", json={"persona": "des"}, headers=people.root)
    assert await problem(refused) == (409, "over-capacity")


async def test_concurrent_creates_never_exceed_capacity(api, operator, people):
    await set_plan(operator, people.org, "pro")
    personas = ["cto", "dev", "des", "researcher", "marketer", "self"]
    responses = await asyncio.gather(
        *(api.post("/v1/agents", json={"persona": p}, headers=people.root) for p in personas)
    )
    assert sorted(r.status for r in responses) == [201, 201, 201, 409, 409, 409]


async def test_only_an_admin_creates_org_agents(api, people):
    for who in (people.ada, people.ada_agent):
        response = await api.post("/v1/agents", json={"persona": "cto"}, headers=who)
        assert (await problem(response))[0] == 403


async def _status(api, headers, status: int) -> bool:
    return (await api.get("/v1/agents/me", headers=headers)).status == status


async def test_each_agent_is_metered_apart_and_the_bill_pages_its_agents(api, operator, people):
    """250 agents' runs in one org's month: each agent's month is its own key, so a run
    rewrites its agent's alone (the org's month held whole was rewritten at every run, and
    past some 20,000 agents no longer fit in a message of the bus); the bill totals the
    month and pages its agents by id."""
    js = operator.jetstream()
    start = datetime.now(UTC).replace(microsecond=0)
    ids = [f"agent:{people.org}/p{n:03d}" for n in range(250)]
    for agent in ids:
        ended = RunEnded(
            run=agent, org=people.org, agent=agent, kind="personal", user=agent[6:],
            started_at=start, ended_at=start + timedelta(milliseconds=1500),
        )  # fmt: skip
        await js.publish(f"agents.run.ended.{people.org}", codec.encode(ended))

    async def billed() -> dict | None:
        bill = await (await api.get("/v1/billing", headers=people.root)).json()
        return bill if bill["seconds"] == 2 * len(ids) else None

    bill = await eventually(billed, timeout=60)
    assert bill["amount_usd"] == str(meter.amount(2 * len(ids), Decimal("0.12")))
    read, cursor = [], None
    while True:
        query = "?limit=100" + ("" if cursor is None else f"&after={cursor}")
        page = await (await api.get(f"/v1/billing{query}", headers=people.root)).json()
        assert page["seconds"] == bill["seconds"] and len(page["agents"]) <= 100
        read += [(a["agent"], a["runs"], a["seconds"]) for a in page["agents"]]
        if (cursor := page["next"]) is None:
            break
    assert read == [(agent, 1, 2) for agent in ids]
    kv = await js.key_value("agents-meter")
    month = start.strftime("%Y-%m")
    assert len(await current(kv, f"{people.org}.{month}.*")) == len(ids)


async def test_an_admin_lists_the_orgs_own_agents_and_bots_and_no_one_else_does(
    api, operator, people
):
    """Before, an org's agents counted against its plan and none could be read back."""
    await set_plan(operator, people.org, "pro")
    for body in ({"persona": "dev"}, {"persona": "cto"}, {"persona": "marketer", "kind": "bot"}):
        made = await api.post("/v1/agents", json=body, headers=people.root)
        assert made.status == 201, await made.text()
    listed = await api.get("/v1/agents", params={"limit": "2"}, headers=people.root)
    assert listed.status == 200, await listed.text()
    page = await listed.json()
    org = people.org
    assert [a["id"] for a in page["agents"]] == [f"agent:{org}:cto", f"agent:{org}:dev"]
    assert page["next"] == f"agent:{org}:dev"
    rest = await api.get("/v1/agents", params={"after": page["next"]}, headers=people.root)
    ((bot,),) = [(await rest.json())["agents"]]
    assert (bot["id"], bot["kind"], bot["persona"]) == (f"bot:{org}:marketer", "bot", "marketer")
    assert await problem(await api.get("/v1/agents", headers=people.ada)) == (403, "admin-only")
    theirs = bearer(token(org=f"{org}-x", user=f"{org}-x/root", roles=("admin",)))
    assert (await (await api.get("/v1/agents", headers=theirs)).json())["agents"] == []


async def test_the_operator_puts_an_org_on_a_plan_from_the_command_line(
    api, operator, people, stack
):
    """`tether plan ORG PLAN`: before, nothing but a request composed by hand on the bus
    changed a plan, so an org made by `make run` could make no agent at all."""

    # Found as `tether up` finds it: an empty NATS_URL is unset, as the services read it.
    port = stack.nats_url.rsplit(":", 1)[1]
    env = stack.env(NATS_URL="", TETHER_NATS_PORT=port)

    async def plan(*args: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "cli.main", "plan", *args],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    done = await plan(people.org, "team")
    assert (done.returncode, done.stdout) == (0, f"{people.org} is on plan team\n"), done.stderr
    billing = await (await api.get("/v1/billing", headers=people.root)).json()
    assert (billing["plan"], billing["capacity"]["bots"]["allowed"]) == ("team", 5)
    [record] = [r for r in await records(operator.jetstream(), people.org)
                if r.action == "agents.plan.set"]  # fmt: skip
    assert (record.target, record.actor.sub) == ("team", "operator")

    unknown = await plan(people.org, "gold")
    assert unknown.returncode == 1
    assert unknown.stderr == (
        "tether plan: no plan 'gold' in the catalog: enterprise, free, pro, team\n"
    )


async def test_a_plan_set_as_the_system_starts_waits_for_the_agents_service_and_is_set_once(
    stack, tmp_path
):
    """`tether plan` run as `tether up` starts, its bus up and its services not serving yet:
    before, a traceback of NoRespondersError, exit 1. It says so once, asks again under one
    key, and the plan is set and recorded once as soon as the agents service serves."""
    async with _bus_of_its_own(stack, tmp_path) as (url, nc, _):
        cli = await _cli(stack, url, "plan", "acme-early", "team")
        said = await asyncio.wait_for(cli.stderr.readline(), timeout=20)
        assert said == (
            b"tether plan: no replica serves tether.agents.plan; asking again for up to 30 s\n"
        )
        async with (
            module_process("services.agents.main", _serving(stack, url, "agents")),
            module_process("services.audit.main", _serving(stack, url, "audit")),  # its record
        ):
            out, err = await asyncio.wait_for(cli.communicate(), timeout=60)
        assert (cli.returncode, out, err) == (0, b"acme-early is on plan team\n", b"")
        set_ = [r for r in await records(nc.jetstream(), "acme-early")
                if r.action == "agents.plan.set"]  # fmt: skip
        assert [(r.target, r.actor.sub) for r in set_] == [("team", OPERATOR)]


async def test_an_account_announced_as_the_system_starts_waits_for_its_stream(stack, tmp_path):
    """`tether account created` run before any service has made the EVENTS stream: before,
    "cannot announce the accounts: NoStreamResponseError()", exit 2, for an identity
    provider's hook to try again. It asks again until the stream takes it."""
    async with _bus_of_its_own(stack, tmp_path) as (url, nc, _):
        cli = await _cli(stack, url, "account", "created", "acme-early/ada", "acme-early/bob")
        said = await asyncio.wait_for(cli.stderr.readline(), timeout=20)
        assert said == (
            b"tether account created: nats: no response from stream; asking again for up to 30 s\n"
        )
        js = nc.jetstream()
        await ensure_shared_streams(js, [EVENTS.name])  # as the first service to start does
        out, err = await asyncio.wait_for(cli.communicate(), timeout=60)
        assert (cli.returncode, out, err) == (0, b"announced 2 account(s)\n", b"")
        events = await js.stream_info(EVENTS.name)
        assert events.state.messages == 2


async def test_the_outbox_read_as_the_system_starts_waits_for_its_stream(stack, tmp_path):
    """`tether outbox` run before the rooms service has made ROOMS: before, "cannot read
    what left just now: DirectGetUnavailable('ROOMS'); ask again", exit 2, to someone
    waiting for a code the system just sent. It asks again until the stream serves it."""
    async with _bus_of_its_own(stack, tmp_path) as (url, nc, _):
        cli = await _cli(stack, url, "outbox")
        said = await asyncio.wait_for(cli.stderr.readline(), timeout=20)
        assert said == (
            b"tether outbox: no one serves direct gets of ROOMS yet; asking again for up to 30 s\n"
        )
        await ensure_stream(nc.jetstream(), ROOMS, replicas=1)  # as the rooms service does
        out, err = await asyncio.wait_for(cli.communicate(), timeout=60)
    assert (cli.returncode, out, err) == (0, b"", b"0 sent by the lines in the last 60 minutes\n")


async def test_the_dead_letters_read_while_dead_is_not_served_wait_for_it(stack, tmp_path):
    """`tether dead` when DEAD is made and no one answers its direct gets (its leader being
    elected; here, made without them, as no service makes it): before, "cannot read or
    send the dead letters now", exit 2. It asks again until DEAD answers."""
    async with _bus_of_its_own(stack, tmp_path) as (url, nc, _):
        js = nc.jetstream()
        await js.add_stream(name=DEAD.name, subjects=list(DEAD.subjects), allow_direct=False)
        cli = await _cli(stack, url, "dead")
        said = await asyncio.wait_for(cli.stderr.readline(), timeout=20)
        assert said == (
            b"tether dead: no one serves direct gets of DEAD yet; asking again for up to 30 s\n"
        )
        config = (await js.stream_info(DEAD.name)).config
        config.allow_direct = True
        await js.update_stream(config)
        out, err = await asyncio.wait_for(cli.communicate(), timeout=60)
    assert (cli.returncode, out, err) == (0, b"0 dead letter(s) parked\n", b"")


async def test_a_command_waiting_on_a_bus_that_stops_gives_up_at_once(stack, tmp_path):
    """`tether plan` asking again while the services start, when `tether up` (its server)
    stops meanwhile: its connection is closed for good, and it asked that closed connection
    for the rest of its 30 s before saying so. It says the connection closed, exit 2."""
    async with _bus_of_its_own(stack, tmp_path) as (url, _, server):
        cli = await _cli(stack, url, "plan", "acme-early", "team")
        said = await asyncio.wait_for(cli.stderr.readline(), timeout=20)
        assert said.startswith(b"tether plan: no replica serves tether.agents.plan;")
        await asyncio.to_thread(stop_all, [server])
        out, err = await asyncio.wait_for(cli.communicate(), timeout=20)
    assert (cli.returncode, out) == (2, b"")
    assert err == f"tether plan: the connection to NATS at {url} closed; not asked again\n".encode()


@contextlib.asynccontextmanager
async def _bus_of_its_own(
    stack, tmp_path
) -> AsyncIterator[tuple[str, nats.NATS, subprocess.Popen[bytes]]]:
    """A nats-server with the stack's users and nothing made on it or serving it yet, as
    `tether up` has started it; the operator's connection to it; and its process."""
    port = free_port()
    config = stack.nats_config | {
        "listen": f"127.0.0.1:{port}",
        "http": f"127.0.0.1:{free_port()}",
        "jetstream": {"store_dir": str(tmp_path / "js")},
    }
    server = await asyncio.to_thread(start_nats, config, tmp_path / "nats.json")
    url = f"nats://127.0.0.1:{port}"
    try:
        nc = await nats.connect(url, user=OPERATOR, password=stack.passwords[OPERATOR],
                                inbox_prefix=inbox_prefix(OPERATOR))  # fmt: skip
        try:
            yield url, nc, server
        finally:
            await nc.close()
    finally:
        await asyncio.to_thread(stop_all, [server])


async def _cli(stack, url: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", *args,
        env=stack.env(NATS_URL=url), stdout=PIPE, stderr=PIPE,
    )  # fmt: skip


def _serving(stack, url: str, service: str) -> dict[str, str]:
    """What `service`'s process is started with to serve on `url`."""
    password = stack.passwords[service]
    return {"NATS_URL": url, "NATS_USER": service, "NATS_PASSWORD": password,
            "TETHER_METRICS_PORT": "0"}  # fmt: skip
