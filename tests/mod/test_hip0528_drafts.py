"""hip-0528 §9.4 through the running services: who writes what as a draft, Keep at the
draft's base, Discard, the sixteen-draft limit, and the ladder's table for a person's own
agent (its level asked of the ladder over the bus)."""

import asyncio
import json

import pytest

from libs.audit.reading import records
from libs.contracts import agents
from tests.mod.conftest import (
    HIDE_BOARD,
    SERVED,
    install,
    keep,
    level,
    refusal,
    version,
    weather,
    write,
)
from tests.support import (
    answered_again_after_a_failover,
    bearer,
    forget_idempotency_key,
    forget_kept_answers,
    org_agent,
    token,
)

UNITS = {"op": "set", "kind": "settings", "id": "hanzo/settings/units", "value": "imperial"}


async def test_hip0528_09_4_rule_2_at_draft_and_confirm_the_agent_s_write_waits_for_keep(
    api, people
):
    for level_ in ("draft", "confirm"):
        await level(api, people.ada, level_)
        r = await write(api, people.agent, "user", [HIDE_BOARD])
        assert r.status == 202, await r.text()
        draft = (await r.json())["draft"]
        assert draft["state"] == "open" and draft["act"] == f"agent:{people.org}/ada"
        assert "commits_at" not in draft and f"your level is {level_}" in draft["waits"]
        # Where what waits is read (a 202's Location), by the person who keeps it.
        assert r.headers["Location"] == f"/v1/mod/drafts/{draft['id']}"
        assert await (await api.get(r.headers["Location"], headers=people.ada)).json() == draft
    assert await version(api, people.ada, "user") == 0


async def test_hip0528_09_4_rule_2_at_send_instant_the_agent_s_write_commits_at_once(api, people):
    await level(api, people.ada, "send", window="instant")
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 200, await r.text()
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["version"] == (await r.json())["version"]
    assert layer["change"]["act"] == f"agent:{people.org}/ada"


async def test_hip0528_09_4_rule_2_at_send_with_a_window_the_draft_says_when_it_commits(
    api, people
):
    await level(api, people.ada, "send", window="5m")
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    draft = (await r.json())["draft"]
    assert draft["commits_at"] and "waits" not in draft


async def test_hip0528_09_4_rule_3_a_sensitive_setting_waits_for_keep_at_every_level(api, people):
    m = weather()
    m["contributes"]["settings"].append(
        {
            "id": "budget",
            "title": "Budget",
            "scope": "user",
            "sensitive": True,
            "governs": ["money"],
            "schema": {"type": "integer", "minimum": 0},
        }
    )
    assert (await install(api, people.root, m)).status == 201
    await level(api, people.ada, "send", window="instant")
    budget = {"op": "set", "kind": "settings", "id": "acme/weather/budget", "value": 10}
    r = await write(api, people.agent, "user", [budget])
    assert r.status == 202
    assert "sensitive" in (await r.json())["draft"]["waits"]
    units = {"op": "set", "kind": "settings", "id": "acme/weather/units", "value": "imperial"}
    assert (await write(api, people.agent, "user", [units])).status == 200


async def test_hip0528_09_4_rule_5_no_agent_commits_the_org_s_layer_at_any_level(api, people):
    await level(api, people.root, "send", window="instant")
    r = await write(api, people.root_agent, "org", [HIDE_BOARD])
    assert r.status == 202
    draft = (await r.json())["draft"]
    assert draft["waits"] == "an agent never commits the org's layer"
    refused = await keep(api, people.root_agent, draft["id"])
    assert await refusal(refused) == (403, "may-not-keep")
    assert await refusal(await api.get(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)) == (
        404,
        "draft-not-found",
    )
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert listed["drafts"] == []  # a member's, of the org's drafts: none
    kept = await keep(api, people.root, draft["id"])
    assert kept.status == 200, await kept.text()
    assert await version(api, people.ada, "org") == (await kept.json())["version"]


async def test_hip0528_09_4_rule_7_a_draft_is_shown_over_the_layer_it_would_change(api, people):
    """A host shows an open draft over the layer it would change, to whoever may keep it and
    to the agent that wrote it: the composed view with the draft, and nothing written."""
    await level(api, people.ada, "draft")
    mine = (await (await write(api, people.agent, "user", [HIDE_BOARD, UNITS])).json())["draft"]
    theirs = (await (await write(api, people.root_agent, "org", [UNITS])).json())["draft"]

    async def drawn(headers: dict, draft: dict | None = None):
        path = "/v1/mod/composed" if draft is None else f"/v1/mod/drafts/{draft['id']}/composed"
        r = await api.get(path, headers=headers)
        return r.status, await r.json()

    for who in (people.ada, people.agent):
        status, over = await drawn(who, mine)
        assert status == 200, over
        assert "hanzo/board/board" in over["hidden"]
        assert over["settings"]["hanzo/settings/units"] == "imperial"
        status, now = await drawn(who)
        assert now["hidden"] == [] and now["settings"]["hanzo/settings/units"] == "metric"
        assert over["versions"] == now["versions"]  # nothing written
    # The org's, to its admin and their agent: over the org's layer alone, as every member
    # is drawn it, not over the admin's own changes (before, their own language was there).
    french = {"op": "set", "kind": "settings", "id": "hanzo/settings/language", "value": "fr"}
    assert (await write(api, people.root, "user", [french])).status == 200
    for who in (people.root, people.root_agent):
        status, over = await drawn(who, theirs)
        assert status == 200 and over["settings"]["hanzo/settings/units"] == "imperial"
        assert over["settings"]["hanzo/settings/language"] == "en"
    # Whoever may not keep it, nor wrote it, is shown nothing: not found.
    for who, draft in ((people.bob, mine), (people.ada, theirs), (people.eve, mine)):
        r = await api.get(f"/v1/mod/drafts/{draft['id']}/composed", headers=who)
        assert await refusal(r) == (404, "draft-not-found")


@pytest.mark.parametrize("level_", ["draft", "send"])
async def test_hip0528_09_4_rule_2_an_agent_without_mod_write_is_refused_at_every_level(
    api, people, level_
):
    await level(api, people.ada, level_, window="instant")
    r = await write(api, people.bare_agent, "user", [HIDE_BOARD])
    assert await refusal(r) == (403, "mod-write-needed")


async def test_hip0528_09_4_rule_2_no_agent_but_the_person_s_own_writes_their_layer(
    api, people, operator, client_for, gateway_settings, agents_service
):
    """The org's agent and a bot of the org, acting for Ada with mod:write, do not even
    draft her layer, at send instant as at any level; each still drafts the org's."""
    await level(api, people.ada, "send", window="instant")
    ada = f"{people.org}/ada"
    made_by = await client_for(gateway_settings, services=(*SERVED, agents.CONTRACT))
    ambient = await org_agent(made_by, operator, people.org, people.root, "self", ambient=True)
    bot = await org_agent(made_by, operator, people.org, people.root, "researcher", "bot")
    for act in (ambient, bot):
        other = bearer(token(org=people.org, user=ada, act=act, roles=("mod:write",)))
        refused = await write(api, other, "user", [HIDE_BOARD])
        assert await refusal(refused) == (403, "not-own-agent"), act
        drafted = await write(api, other, "org", [HIDE_BOARD])
        assert drafted.status == 202, await drafted.text()
    assert await version(api, people.ada, "user") == 0
    assert (await write(api, people.agent, "user", [HIDE_BOARD])).status == 200  # her own


async def test_hip0528_09_4_rule_8_keep_commits_at_the_base_and_a_moved_layer_is_409(
    api, people, operator
):
    first = await (await write(api, people.agent, "user", [HIDE_BOARD])).json()
    second = await (await write(api, people.agent, "user", [UNITS])).json()
    agent_keeps = await keep(api, people.agent, first["draft"]["id"])
    assert await refusal(agent_keeps) == (403, "may-not-keep")
    kept = await keep(api, people.ada, first["draft"]["id"])
    assert kept.status == 200, await kept.text()
    moved = await keep(api, people.ada, second["draft"]["id"])
    assert await refusal(moved) == (409, "layer-moved")
    assert (await moved.json())["version"] == (await kept.json())["version"]
    again = await api.get(f"/v1/mod/drafts/{first['draft']['id']}", headers=people.ada)
    assert (await again.json())["state"] == "kept"
    found = [r.action for r in await records(operator.jetstream(), people.org)]
    assert found == [
        "mod.draft.create",
        "mod.draft.create",
        "mod.draft.keep",
        "mod.draft.kept",
        "mod.draft.keep",
        "mod.draft.keep.failed",
    ]


async def test_hip0528_09_4_rule_8_discard_by_the_keeper_or_the_writing_agent_only(api, people):
    one = (await (await write(api, people.agent, "user", [HIDE_BOARD])).json())["draft"]
    two = (await (await write(api, people.agent, "user", [UNITS])).json())["draft"]
    bob = await api.delete(f"/v1/mod/drafts/{one['id']}", headers=people.bob)
    assert await refusal(bob) == (404, "draft-not-found")
    assert (await api.delete(f"/v1/mod/drafts/{one['id']}", headers=people.agent)).status == 204
    by_ada = await api.delete(f"/v1/mod/drafts/{two['id']}", headers=people.ada)
    assert (by_ada.status, await by_ada.read()) == (204, b"")
    document = await (await api.get("/v1/openapi.json")).json()
    no_body = document["paths"]["/v1/mod/drafts/{id}"]["delete"]["responses"]["204"]
    assert (no_body["description"], "content" in no_body) == (
        "done: no body (LayerDraft is not sent)",
        False,
    )
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert listed["drafts"] == []
    gone = await api.get(f"/v1/mod/drafts/{one['id']}", headers=people.ada)
    assert (await gone.json())["state"] == "discarded"


async def test_hip0528_09_4_rule_8_a_draft_kept_and_discarded_at_once_is_one_or_the_other(
    api, people
):
    """Ada keeps a draft on one device as she discards it on another. Before, both were
    answered as done, every time: told it was discarded, her layer held its change."""
    outcomes = []
    for i in range(8):
        rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"Talk {i}"}
        draft = (await (await write(api, people.agent, "user", [rename])).json())["draft"]
        kept, discarded = await asyncio.gather(
            keep(api, people.ada, draft["id"]),
            api.delete(f"/v1/mod/drafts/{draft['id']}", headers=people.ada),
        )
        found = await api.get(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)
        layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
        applied = rename in layer["ops"]
        outcomes.append((kept.status, discarded.status, (await found.json())["state"], applied))
    assert set(outcomes) <= {(200, 409, "kept", True), (409, 204, "discarded", False)}, outcomes


async def test_a_keyed_discard_sent_again_is_answered_as_it_was(api, people, operator):
    """A Discard whose answer was lost, sent again: before, keys were a POST's alone, and
    the Discard that had worked was answered 409, as if it had not."""
    draft = (await (await write(api, people.agent, "user", [HIDE_BOARD])).json())["draft"]
    keyed = people.ada | {"Idempotency-Key": f"discard-{draft['id']}"}
    first = await api.delete(f"/v1/mod/drafts/{draft['id']}", headers=keyed)
    again = await api.delete(f"/v1/mod/drafts/{draft['id']}", headers=keyed)
    assert (first.status, again.status) == (204, 204)
    assert again.headers.get("Idempotent-Replayed") == "true"
    found = [r.action for r in await records(operator.jetstream(), people.org)]
    assert found.count("mod.draft.discard") == 1
    unkeyed = await api.delete(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)
    assert await refusal(unkeyed) == (409, "draft-closed")


async def test_hip0528_09_4_rule_8_a_seventeenth_open_draft_is_refused(api, people, connect):
    for i in range(16):
        op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"C{i}"}
        assert (await write(api, people.agent, "user", [op])).status == 202
    async with connect("mod") as nc:
        timed = await pending_timers(nc)
        r = await write(api, people.agent, "user", [HIDE_BOARD])
        assert await refusal(r) == (409, "drafts-full")
        assert await pending_timers(nc) == timed  # the refused draft's timers canceled
    listed = await (await api.get("/v1/mod/drafts", headers=people.agent)).json()
    assert len(listed["drafts"]) == 16
    await api.delete(f"/v1/mod/drafts/{listed['drafts'][0]['id']}", headers=people.ada)
    assert (await write(api, people.agent, "user", [HIDE_BOARD])).status == 202


async def test_hip0528_09_4_rule_8_the_org_s_sixteen_are_counted_over_every_writer(api, people):
    """Each writer's drafts are held apart, so an agent reads only its own; the layer's
    bound is still one, over them all, however their writes meet."""
    op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Chat"}
    writes = [
        write(api, agent, "org", [op | {"title": f"{n}{i}"}])
        for i in range(10)
        for n, agent in (("a", people.agent), ("r", people.root_agent))
    ]
    statuses = sorted(r.status for r in await asyncio.gather(*writes))
    assert statuses == [202] * 16 + [409] * 4
    by_admin = (await (await api.get("/v1/mod/drafts", headers=people.root)).json())["drafts"]
    assert len(by_admin) == 16
    for agent, act in ((people.agent, "ada"), (people.root_agent, "root")):
        own = (await (await api.get("/v1/mod/drafts", headers=agent)).json())["drafts"]
        assert own and {d["act"] for d in own} == {f"agent:{people.org}/{act}"}
        assert {d["id"] for d in own} < {d["id"] for d in by_admin}
    ada_s = (await (await api.get("/v1/mod/drafts", headers=people.agent)).json())["drafts"]
    other = next(d for d in by_admin if d["act"] != ada_s[0]["act"])
    found = await api.get(f"/v1/mod/drafts/{other['id']}", headers=people.agent)
    assert await refusal(found) == (404, "draft-not-found")


async def pending_timers(nc) -> set[str]:
    """The keys of mod's timers still to fire, as the scheduler answers mod."""
    reply = await nc.request("tether.scheduler.list.mod", b'{"prefix": "mod."}', timeout=10)
    return {t["key"] for t in json.loads(reply.data)["timers"] if t["state"] == "pending"}


async def test_hip0528_09_4_a_person_may_draft_their_own_write_and_keep_it(api, people):
    r = await write(api, people.ada, "user", [HIDE_BOARD], draft=True)
    assert r.status == 202
    draft = (await r.json())["draft"]
    assert "act" not in draft and draft["waits"] == "held for your Keep"
    kept = await keep(api, people.ada, draft["id"])
    assert kept.status == 200


@pytest.mark.parametrize("kept", [True, False], ids=["answer-kept", "replica-kept-none"])
async def test_a_keyed_write_run_again_holds_one_draft(api, people, stack, operator, kept):
    """An agent's write whose answer was lost with its gateway, sent again with its
    Idempotency-Key, is answered with the same draft and holds no second one: from the
    answer mod kept or, if the replica died before it kept one, from the draft made under
    the key."""
    await level(api, people.ada, "draft")
    key = f"hide-board-{kept}"
    keyed = people.agent | {"Idempotency-Key": key}
    first = await write(api, keyed, "user", [HIDE_BOARD])
    assert first.status == 202, await first.text()
    await forget_idempotency_key(stack.redis_url, key)
    if not kept:
        await forget_kept_answers(operator, "mod")
    again = await write(api, keyed, "user", [HIDE_BOARD])
    assert again.status == 202, await again.text()
    assert await again.json() == await first.json()
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert [d["id"] for d in listed["drafts"]] == [(await first.json())["draft"]["id"]]


async def test_a_keyed_keep_lost_in_a_failover_is_answered_as_kept(api, people, stack, operator):
    await level(api, people.ada, "draft")
    held = await write(api, people.agent, "user", [HIDE_BOARD])
    assert held.status == 202, await held.text()
    draft = (await held.json())["draft"]
    keyed = people.ada | {"Idempotency-Key": "keep-board"}
    kept = await answered_again_after_a_failover(
        api, f"/v1/mod/drafts/{draft['id']}/commit", {}, keyed,
        service="mod", redis_url=stack.redis_url, operator=operator, status=200,
    )  # fmt: skip
    listed = await (await api.get("/v1/mod/layers/user/versions", headers=people.ada)).json()
    assert [v["version"] for v in listed["versions"] if v["version"] > draft["base"]] == [
        kept["version"]
    ]


async def test_a_keyed_discard_lost_in_a_failover_is_answered_as_discarded(
    api, people, stack, operator
):
    await level(api, people.ada, "draft")
    held = await write(api, people.agent, "user", [HIDE_BOARD])
    assert held.status == 202, await held.text()
    draft = (await held.json())["draft"]
    keyed = people.ada | {"Idempotency-Key": "discard-board"}
    await answered_again_after_a_failover(
        api, f"/v1/mod/drafts/{draft['id']}", {}, keyed, service="mod",
        redis_url=stack.redis_url, operator=operator, status=204, method="DELETE",
    )  # fmt: skip
    found = await (await api.get(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)).json()
    assert found["state"] == "discarded"


async def test_a_key_whose_draft_was_made_sent_with_another_write_is_refused(
    api, people, stack, operator
):
    await level(api, people.ada, "draft")
    keyed = people.agent | {"Idempotency-Key": "hide-board-other"}
    first = await write(api, keyed, "user", [HIDE_BOARD])
    assert first.status == 202, await first.text()
    await forget_idempotency_key(stack.redis_url, "hide-board-other")
    await forget_kept_answers(operator, "mod")
    other = await write(api, keyed, "user", [UNITS])
    assert await refusal(other) == (422, "idempotency-key-reused")
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert [d["ops"] for d in listed["drafts"]] == [[HIDE_BOARD]]
