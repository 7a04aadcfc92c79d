"""hip-0528 §9.5's stream and §9.4 rule 8's expiry, through the running services: a watcher
of the KV plane sees each new version and each draft's changes, its expiry included (drafts
live four seconds here)."""

import asyncio
from datetime import timedelta

import msgspec
import pytest

from libs.audit.reading import records
from libs.contracts import agents
from libs.contracts.base import key_token
from libs.contracts.mod import DRAFTS_BUCKET, LAYERS_BUCKET, drafts_key, layer_key
from services.gateway.app import NATS
from tests.mod.conftest import HIDE_BOARD, SERVED, write
from tests.personal.conftest import eventually
from tests.support import Link, bearer, org_agent, token


@pytest.fixture
def draft_ttl() -> timedelta:
    return timedelta(seconds=4)


async def events(response, wanted: int, timeout: float = 20) -> list[tuple[str, dict]]:
    """The next `wanted` events of a stream."""
    found: list[tuple[str, dict]] = []
    name = None

    async def read() -> None:
        nonlocal name
        while len(found) < wanted:
            line = (await response.content.readline()).decode().strip()
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name:
                found.append((name, msgspec.json.decode(line.removeprefix("data: "))))

    await asyncio.wait_for(read(), timeout)
    return found


async def watch(api, headers: dict):
    response = await api.get("/v1/mod/watch", headers=headers)
    assert response.status == 200
    assert (await response.content.readline()).startswith(b": watching")
    return response


async def test_hip0528_09_5_a_watcher_sees_versions_and_drafts_and_a_draft_expire(
    api, people, operator
):
    mine = await watch(api, people.ada)
    bobs = await watch(api, people.bob)
    v = (await (await write(api, people.ada, "user", [HIDE_BOARD])).json())["version"]
    draft = (await (await write(api, people.agent, "user", [HIDE_BOARD])).json())["draft"]
    seen = await events(mine, 3)
    assert seen[0] == ("layer", {"layer": "user", "version": v})
    assert seen[1] == ("draft", {"layer": "user", "id": draft["id"], "state": "open"})
    assert seen[2] == ("draft", {"layer": "user", "id": draft["id"], "state": "expired"})
    org = (await (await write(api, people.root, "org", [HIDE_BOARD])).json())["version"]
    assert await events(bobs, 1) == [("layer", {"layer": "org", "version": org})]
    made = [r for r in await records(operator.jetstream(), people.org) if r.target == draft["id"]]
    by = {r.action: r.actor for r in made}
    assert by["mod.draft.create"].act == draft["act"]  # the agent's draft
    assert by["mod.draft.expire"] is None  # its expiry no one's act, as an ask's is
    mine.close()
    bobs.close()


async def test_hip0528_09_5_a_write_made_once_the_watch_is_open_is_seen(api, people, operator):
    """`: watching` comes once every watcher is past what was stored before it: a version
    stored as soon as a client reads it is news, never taken for what was there already.
    The version is put straight into the bucket, the soonest a write can follow."""
    layers = await operator.jetstream().key_value(LAYERS_BUCKET)
    key = f"{people.org}.user.{key_token(f'{people.org}/ada')}"
    for _ in range(10):
        watching = await watch(api, people.ada)
        version = await layers.put(key, b"{}")
        assert await events(watching, 1, timeout=10) == [
            ("layer", {"layer": "user", "version": version})
        ]
        watching.close()


async def test_hip0528_09_5_a_watch_whose_gateway_lost_the_bus_sees_what_was_written_meanwhile(
    client_for, gateway_settings, api, people
):
    """Its watchers are ordered consumers: back on the bus, each goes on from the last
    revision it saw, so a version written while the gateway was off it is still an event.
    The watch takes its turns (whether an org's agent stands) meanwhile, off the bus too."""
    link = Link(gateway_settings.nats_url)
    async with link as url:
        settings = msgspec.structs.replace(gateway_settings, nats_url=url, stream_reread=0.5)
        gateway = await client_for(settings, services=SERVED)
        nc = gateway.server.app[NATS]
        watching = await watch(gateway, people.ada)
        link.cut()
        await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
        await asyncio.sleep(1.5)  # three turns come round while it is off the bus
        v = (await (await write(api, people.ada, "user", [HIDE_BOARD])).json())["version"]
        link.mend()
        assert await events(watching, 1, timeout=30) == [("layer", {"layer": "user", "version": v})]
        watching.close()


async def test_hip0528_09_4_a_member_s_watch_never_reads_the_org_s_drafts(api, people, operator):
    """The org's drafts are its admins' to keep and the writing agent's own: a member's
    watch holds no watcher of them on the server at all, where an admin's does."""
    js = operator.jetstream()
    org_drafts = f"$KV.{DRAFTS_BUCKET}.{people.org}.org.*.*"

    async def watching_org_drafts() -> bool:
        found = await js.consumers_info(f"KV_{DRAFTS_BUCKET}")
        return any(c.config.filter_subject == org_drafts for c in found)

    bobs = await watch(api, people.bob)
    assert not await watching_org_drafts()
    roots = await watch(api, people.root)
    assert await watching_org_drafts()
    bobs.close()
    roots.close()


async def test_hip0528_09_4_an_agent_s_watch_reads_only_the_drafts_it_wrote(api, people, operator):
    """An agent's watcher of a layer's drafts is filtered on the server to its own writer's
    key: another agent's drafts over the org's layer never reach the gateway for it."""
    js = operator.jetstream()
    ada = f"{people.org}/ada"
    own = {
        f"$KV.{DRAFTS_BUCKET}.{drafts_key(layer_key(people.org, layer, ada), ada, f'agent:{ada}')}"
        for layer in ("org", "user")
    }

    async def drafts_watched() -> set[str]:
        found = await js.consumers_info(f"KV_{DRAFTS_BUCKET}")
        return {c.config.filter_subject for c in found}

    before = await drafts_watched()
    agents = await watch(api, people.agent)
    assert await drafts_watched() - before == own
    r = await write(api, people.root_agent, "org", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    mine = await write(api, people.agent, "org", [HIDE_BOARD])
    draft = (await mine.json())["draft"]
    assert await events(agents, 1) == [
        ("draft", {"layer": "org", "id": draft["id"], "state": "open"})
    ]
    agents.close()


async def test_a_removed_bots_watch_ends_at_its_next_turn(
    people, operator, client_for, gateway_settings, agents_service, mod_service
):
    """A watch is authorized as it opens, and one a bot of the org opened ran on after
    the bot was removed, until its token expired. Now it reads whether its caller stands
    every TETHER_STREAM_REREAD seconds, and ends with a `refused` event saying why."""
    settings = msgspec.structs.replace(gateway_settings, stream_reread=1.0)
    api = await client_for(settings, services=(*SERVED, agents.CONTRACT))
    bot = await org_agent(api, operator, people.org, people.root, "researcher", "bot")
    as_bot = bearer(token(org=people.org, user=f"{people.org}/ada", act=bot, roles=("mod:read",)))
    watching = await watch(api, as_bot)
    removed = await api.post(f"/v1/agents/{bot}/remove", headers=people.root)
    assert removed.status == 200, await removed.text()
    [(name, refused)] = await events(watching, 1, timeout=20)
    assert (name, refused["type"]) == ("refused", "urn:tether:problem:act-not-standing")
    assert (await watching.content.read()).strip() == b""  # and the stream ends
