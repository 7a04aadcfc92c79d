"""hip-0528 §9.1 to §9.3 and §9.6 through the running services: the surface, writes checked
whole, versions, revert, privacy of a person's layer, and the record of every change."""

import asyncio

from libs.audit.reading import records
from tests.mod.conftest import HIDE_BOARD, install, refusal, version, weather, write
from tests.support import answered_again_after_a_failover, bearer, token


async def test_hip0528_09_1_an_agent_is_answered_a_surface_without_what_governs_it(api, people):
    mine = await (await api.get("/v1/mod/surface", headers=people.ada)).json()
    agents = await (await api.get("/v1/mod/surface", headers=people.agent)).json()
    ids = {e["id"] for e in mine["entries"]} - {e["id"] for e in agents["entries"]}
    assert ids == {f"hanzo/settings/ladder-{s}" for s in ("level", "window", "ceiling")}
    level = next(e for e in mine["entries"] if e["id"] == "hanzo/settings/ladder-level")
    assert level["sensitive"] is True and level["ops"] == ["set"] and level["layer"] == "hanzo"
    op = {"op": "set", "kind": "settings", "id": "hanzo/settings/ladder-level", "value": "send"}
    r = await write(api, people.agent, "user", [op])
    assert await refusal(r) == (422, "patch-invalid")
    assert (await r.json())["index"] == 0
    # the person sees it, and sets it where the one level is kept: the ladder
    r = await write(api, people.ada, "user", [op])
    assert await refusal(r) == (422, "kept-by-ladder")
    assert (await r.json())["index"] == 0 and await version(api, people.ada, "user") == 0


async def test_hip0528_09_2_rule_1_a_refused_op_is_named_by_index_and_nothing_is_written(
    api, people
):
    before = await version(api, people.ada, "user")
    bad = {"op": "token", "kind": "tokens", "id": "hanzo/settings/accent", "value": "#f00"}
    r = await write(api, people.ada, "user", [HIDE_BOARD, bad])
    assert await refusal(r) == (422, "patch-invalid")
    body = await r.json()
    assert body["index"] == 1 and "is not one of" in body["detail"]
    assert await version(api, people.ada, "user") == before


async def test_hip0528_09_2_rule_3_at_most_64_ops_and_a_note_of_200_plain_characters(api, people):
    many = [{"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "C"}] * 65
    assert (await write(api, people.ada, "user", many)).status == 422
    assert (await write(api, people.ada, "user", [HIDE_BOARD], note="n" * 201)).status == 422
    assert (await write(api, people.ada, "user", [HIDE_BOARD], note="a\x1bb")).status == 422
    assert (await write(api, people.ada, "user", [HIDE_BOARD], note="n" * 200)).status == 200


async def test_hip0528_09_4_rule_6_the_org_s_word_holds(api, people):
    assert (await write(api, people.root, "org", [HIDE_BOARD])).status == 200
    show = {"op": "show", "kind": "apps", "id": "hanzo/board/board"}
    assert await refusal(await write(api, people.ada, "user", [show])) == (422, "patch-invalid")
    spend = {"op": "set", "kind": "settings", "id": "hanzo/settings/spend-limit", "value": 50}
    r = await write(api, people.ada, "user", [spend])
    assert "only in the org layer" in (await r.json())["detail"]
    assert (await write(api, people.root, "org", [spend])).status == 200
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert "hanzo/board/board" in composed["hidden"]
    assert composed["settings"]["hanzo/settings/spend-limit"] == 50
    assert await refusal(await write(api, people.ada, "org", [HIDE_BOARD])) == (403, "admin-only")


async def test_hip0528_09_2_rule_5_an_op_on_a_departed_id_is_kept_inert_and_applies_again(
    api, people
):
    assert (await install(api, people.root, weather())).status == 201
    hide = {"op": "hide", "kind": "apps", "id": "acme/weather/weather"}
    assert (await write(api, people.ada, "user", [hide])).status == 200
    await api.delete("/v1/mod/installs/acme/weather", headers=people.root)
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["ops"] == [hide]
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert "acme/weather/weather" not in composed["hidden"]
    assert (await install(api, people.root, weather())).status == 201
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert "acme/weather/weather" in composed["hidden"]


async def test_what_the_org_draws_for_every_member_is_composed_without_their_own(api, people):
    """An admin arranging the org's layer sees what it draws for every member: hanzo and the
    org, without the changes of their own (or of any member) over it."""
    assert (await write(api, people.root, "org", [HIDE_BOARD])).status == 200
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    for someone in (people.root, people.ada):
        assert (await write(api, someone, "user", [rename])).status == 200

    def chat(composed: dict) -> str:
        return next(a["title"] for a in composed["apps"] if a["id"] == "hanzo/chat/chat")

    for someone in (people.root, people.ada):
        theirs = await (await api.get("/v1/mod/composed", headers=someone)).json()
        everyones = await (await api.get("/v1/mod/composed/org", headers=someone)).json()
        assert (chat(theirs), chat(everyones)) == ("Talk", "Chat")
        assert theirs["hidden"] == everyones["hidden"] == ["hanzo/board/board"]
        assert everyones["versions"] == theirs["versions"]


async def test_hip0528_09_3_a_write_names_its_base_and_a_stale_one_gets_409_and_the_version(
    api, people
):
    first = await (await write(api, people.ada, "user", [HIDE_BOARD], base=0)).json()
    stale = await write(api, people.ada, "user", [HIDE_BOARD], base=0)
    assert await refusal(stale) == (409, "layer-moved")
    assert (await stale.json())["version"] == first["version"]


async def test_a_keyed_write_lost_in_a_failover_is_answered_as_made(api, people, stack, operator):
    """Written, its answer lost with its gateway and its replica: the retry is answered
    with the version it made, not refused as stale, and writes no second version."""
    base = await version(api, people.ada, "user")
    keyed = people.ada | {"Idempotency-Key": "hide-board-written"}
    written = await answered_again_after_a_failover(
        api, "/v1/mod/layers/user", {"base": base, "ops": [HIDE_BOARD]}, keyed,
        service="mod", redis_url=stack.redis_url, operator=operator, status=200,
    )  # fmt: skip
    listed = await (await api.get("/v1/mod/layers/user/versions", headers=people.ada)).json()
    assert [v["version"] for v in listed["versions"] if v["version"] > base] == [written["version"]]


async def test_hip0528_09_3_ten_writers_retrying_on_409_all_land(api, people):
    apps = ["chat", "dev", "studio", "tabs", "home", "inbox", "contacts", "meet", "drive", "team"]

    async def writer(name: str) -> int:
        op = {"op": "rename", "kind": "apps", "id": f"hanzo/{name}/{name}", "title": name.upper()}
        conflicts = 0
        while True:
            r = await write(api, people.ada, "user", [op])
            if r.status == 200:
                return conflicts
            assert r.status == 409, await r.text()
            conflicts += 1

    conflicts = await asyncio.gather(*(writer(a) for a in apps))
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert sorted(op["title"] for op in layer["ops"]) == sorted(a.upper() for a in apps)
    assert sum(conflicts) > 0  # they met, and none overwrote another


async def test_hip0528_09_3_versions_newest_first_and_a_revert_writes_a_new_version(api, people):
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/inbox/inbox", "title": "Mail"}
    v1 = await (await write(api, people.ada, "user", [HIDE_BOARD], note="board off")).json()
    v2 = (await (await write(api, people.ada, "user", [rename])).json())["version"]
    listed = await (await api.get("/v1/mod/layers/user/versions", headers=people.ada)).json()
    assert [v["version"] for v in listed["versions"]] == [v2, v1["version"]]
    assert listed["versions"][1]["change"]["note"] == "board off"
    assert listed["versions"][1]["change"]["by"] == f"{people.org}/ada"
    body = {"base": v2, "version": v1["version"]}
    r = await api.post("/v1/mod/layers/user/revert", json=body, headers=people.ada)
    assert r.status == 200, await r.text()
    v3 = (await r.json())["version"]
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["version"] == v3 > v2 and layer["ops"] == [HIDE_BOARD]
    assert layer["change"]["reverted_to"] == v1["version"]
    undo = {"base": v3, "version": v2}  # a revert can itself be reverted
    assert (await api.post("/v1/mod/layers/user/revert", json=undo, headers=people.ada)).ok
    agent = await api.post("/v1/mod/layers/user/revert", json=undo, headers=people.agent)
    assert await refusal(agent) == (403, "may-not-revert")


async def test_a_keyed_revert_lost_in_a_failover_is_answered_as_made(api, people, stack, operator):
    first = await write(api, people.ada, "user", [HIDE_BOARD])
    assert first.status == 200, await first.text()
    v1 = (await first.json())["version"]
    second = await write(api, people.ada, "user", [{**HIDE_BOARD, "op": "show"}])
    assert second.status == 200, await second.text()
    v2 = (await second.json())["version"]
    keyed = people.ada | {"Idempotency-Key": "revert-to-v1"}
    reverted = await answered_again_after_a_failover(
        api, "/v1/mod/layers/user/revert", {"version": v1, "base": v2}, keyed,
        service="mod", redis_url=stack.redis_url, operator=operator, status=200,
    )  # fmt: skip
    listed = await (await api.get("/v1/mod/layers/user/versions", headers=people.ada)).json()
    assert [v["version"] for v in listed["versions"] if v["version"] > v2] == [reverted["version"]]


async def test_hip0528_09_3_rule_6_a_version_past_the_64_retained_answers_404(api, people):
    first = (await (await write(api, people.ada, "user", [HIDE_BOARD])).json())["version"]
    for i in range(64):
        op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"Chat {i}"}
        assert (await write(api, people.ada, "user", [op])).status == 200
    now = await version(api, people.ada, "user")
    listed = await (await api.get("/v1/mod/layers/user/versions", headers=people.ada)).json()
    assert len(listed["versions"]) == 64 and first not in [v["version"] for v in listed["versions"]]
    r = await api.post(
        "/v1/mod/layers/user/revert", json={"base": now, "version": first}, headers=people.ada
    )
    assert await refusal(r) == (404, "version-gone")


async def test_hip0528_09_4_rule_1_nobody_reads_another_person_s_layer(api, people):
    assert (await write(api, people.ada, "user", [HIDE_BOARD])).status == 200
    for other in (people.root, people.bob, people.eve):
        layer = await (await api.get("/v1/mod/layers/user", headers=other)).json()
        assert layer["version"] == 0 and layer["ops"] == []
    assert (await write(api, people.root, "org", [HIDE_BOARD])).status == 200
    eve = await (await api.get("/v1/mod/layers/org", headers=people.eve)).json()
    assert eve["version"] == 0


async def test_hip0528_09_4_rule_1_an_agent_reads_the_plane_only_with_mod_read(api, people):
    """Ada's agent holding no mod scope reads nothing of her arrangement, her drafts or
    her org's installs; with mod:read alone it reads them all, and writes nothing."""
    assert (await write(api, people.ada, "user", [HIDE_BOARD])).status == 200
    ada = f"{people.org}/ada"
    unscoped = bearer(token(org=people.org, user=ada, act=f"agent:{ada}"))
    reads = ("/v1/mod/surface", "/v1/mod/composed", "/v1/mod/installs", "/v1/mod/layers/user",
             "/v1/mod/layers/user/versions", "/v1/mod/drafts")  # fmt: skip
    for path in (*reads, "/v1/mod/watch"):
        refused = await api.get(path, headers=unscoped)
        assert await refusal(refused) == (403, "mod-read-needed"), path
    for path in reads:
        read = await api.get(path, headers=people.bare_agent)  # mod:read alone
        assert read.status == 200, (path, await read.text())
    layer = await (await api.get("/v1/mod/layers/user", headers=people.bare_agent)).json()
    assert layer["ops"] == [HIDE_BOARD]
    refused = await write(api, people.bare_agent, "user", [HIDE_BOARD])
    assert await refusal(refused) == (403, "mod-write-needed")


async def test_hip0528_09_6_every_write_is_recorded_before_and_a_lost_one_as_refused(
    api, people, operator
):
    v = (await (await write(api, people.ada, "user", [HIDE_BOARD], base=0)).json())["version"]
    assert (await write(api, people.ada, "user", [HIDE_BOARD], base=0)).status == 409
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == [
        "mod.layer.write",
        "mod.layer.write",
        "mod.layer.write.failed",
    ]
    assert found[0].data["before"] == 0 and found[0].data["ops"] == [HIDE_BOARD]
    assert found[0].actor is not None and found[0].actor.sub == f"{people.org}/ada"
    assert v > 0
