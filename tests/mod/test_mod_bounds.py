"""What a mod and a layer may grow to, through the running services: the surface, the
composed arrangement and a layer's versions are answered as one message on the bus, so
whatever an admin installs or a person arranges stays readable by everyone it reaches."""

import asyncio
from typing import Any

import pytest

from libs.contracts.mod import Manifest
from libs.contracts.problem import Refused
from libs.runtime.pages import PAGE_BYTES
from services.mod.domain import bounds
from services.mod.domain.manifests import MANIFEST_MOST
from services.mod.domain.patches import LAYER_MOST
from services.mod.domain.schema import VALUE_MOST
from tests.mod.conftest import HIDE_BOARD, digest, install, refusal, version, weather, write

MAX_PAYLOAD = 2 * 1024 * 1024  # the test stack's bus, as the embedded server's


def crowded(i: int, commands: int) -> dict[str, Any]:
    """A mod of many short commands: each draws an entry some four times its own size."""
    name = f"crowd-{i}"
    m = weather(id_=name, title=f"Crowd {i}", provides=[], uses=[], permissions=[])
    m["contributes"] = {"commands": [{"id": f"c{j}", "title": "Go"} for j in range(commands)]}
    m["build"]["digest"] = digest(name)
    return m


async def surface_of(api, headers: dict) -> tuple[dict, int]:
    r = await api.get("/v1/mod/surface", headers=headers)
    assert r.status == 200, await r.text()
    return await r.json(), len(await r.read())


async def test_a_manifest_is_at_most_64_kib(api, people):
    r = await install(api, people.root, crowded(0, 3000))
    status, kind = await refusal(r)
    assert (status, kind) == (422, "manifest-too-large")
    assert f"{MANIFEST_MOST:,}" in (await r.json())["detail"]


async def test_installs_never_take_a_surface_past_what_the_bus_carries(api, people):
    """The org's mods fill their half; a person's their quarter; every member's surface,
    hanzo's mods and both layers', still comes back. Without the bound the org took all
    ten of these, 2.25 MB of surface, past what the bus carries."""
    org_share = bounds.share("org", MAX_PAYLOAD)
    installed = 0
    # Ten of these would draw 4.5 MB.
    while (r := await install(api, people.root, crowded(installed, 2000))).status == 201:
        installed += 1
        assert installed < 10, "the org's mods outgrew the bus"
    assert await refusal(r) == (409, "surface-full"), await r.text()
    assert f"{org_share:,}" in (await r.json())["detail"]
    assert installed >= 3
    # A mod installed again replaces itself, so a full layer still takes a new version.
    again = await install(api, people.root, crowded(0, 1900))
    assert again.status == 201, await again.text()

    mine = 0
    while (r := await install(api, people.ada, crowded(100 + mine, 2000))).status == 201:
        mine += 1
        assert mine < 10, "a person's mods outgrew the bus"
    assert await refusal(r) == (409, "surface-full")
    assert mine >= 1

    ada, size = await surface_of(api, people.ada)
    assert {e["layer"] for e in ada["entries"]} == {"hanzo", "org", "user"}
    assert len([e for e in ada["entries"] if e["layer"] == "org"]) > 3 * 1900
    assert size < MAX_PAYLOAD
    bob, _ = await surface_of(api, people.bob)
    assert not [e for e in bob["entries"] if e["layer"] == "user"]
    for route in ("/v1/mod/composed", "/v1/mod/installs"):
        r = await api.get(route, headers=people.ada)
        assert r.status == 200, (route, await r.text())


def test_a_layer_holds_at_most_a_hundred_mods():
    small = [Manifest(id=f"m{i}", publisher="acme", title="M", version="1") for i in range(100)]
    one_more = Manifest(id="m100", publisher="acme", title="M", version="1")
    with pytest.raises(Refused) as refused:
        bounds.admit("user", small, one_more, MAX_PAYLOAD)
    assert refused.value.problem.status == 409
    assert refused.value.problem.type.endswith(":installs-full")
    bounds.admit("user", small, small[7], MAX_PAYLOAD)  # itself again: replaced


async def renamed(api, headers: dict, ids: list[str], title: str) -> list[int]:
    """Each id renamed, 64 to a write; the versions written."""
    made = []
    for n in range(0, len(ids), 64):
        ops = [
            {"op": "rename", "kind": "commands", "id": i, "title": title} for i in ids[n : n + 64]
        ]
        r = await write(api, headers, "user", ops)
        assert r.status == 200, await r.text()
        made.append((await r.json())["version"])
    return made


async def test_a_layer_s_versions_come_in_pages_within_what_the_bus_carries(api, people):
    """Thirty writes of 64 renames: the versions hold 3 MB of ops, a 500 when answered
    whole. Each page is at most 512 KiB, and the pages hold every version once."""
    r = await install(api, people.ada, crowded(0, 1920))
    assert r.status == 201, await r.text()
    ids = [f"acme/crowd-0/c{j}" for j in range(1920)]
    made = await renamed(api, people.ada, ids, "T" * 40)

    read: list[int] = []
    pages, before = 0, None
    while True:
        query = "" if before is None else f"?before={before}"
        r = await api.get(f"/v1/mod/layers/user/versions{query}", headers=people.ada)
        assert r.status == 200, await r.text()
        assert len(await r.read()) <= PAGE_BYTES + 1024
        page = await r.json()
        read += [v["version"] for v in page["versions"]]
        pages += 1
        if (before := page.get("next")) is None:
            break
    assert pages > 1
    assert read == sorted(made, reverse=True)

    r = await api.get("/v1/mod/layers/user/versions?limit=1", headers=people.ada)
    one = await r.json()
    assert [v["version"] for v in one["versions"]] == read[:1] and one["next"] == read[0]
    r = await api.get(f"/v1/mod/layers/user/versions?limit=1&before={read[0]}", headers=people.ada)
    assert [v["version"] for v in (await r.json())["versions"]] == read[1:2]


async def test_a_layer_holds_at_most_256_kib_of_ops_and_stays_readable(api, people):
    r = await install(api, people.ada, crowded(0, 1920))
    assert r.status == 201, await r.text()
    ids = [f"acme/crowd-0/c{j}" for j in range(1920)]
    made = await renamed(api, people.ada, ids, "T" * 40)
    hides = [{"op": "hide", "kind": "commands", "id": i} for i in ids]
    for n in range(0, len(hides), 64):
        r = await write(api, people.ada, "user", hides[n : n + 64])
        if r.status != 200:
            break
    else:
        raise AssertionError("the layer took 3,840 ops")
    assert await refusal(r) == (409, "layer-full")
    assert f"{LAYER_MOST:,}" in (await r.json())["detail"]

    for route in ("/v1/mod/layers/user", "/v1/mod/composed", "/v1/mod/layers/user/versions"):
        r = await api.get(route, headers=people.ada)
        assert r.status == 200, (route, await r.text())
    # A person out of room reverts to a smaller version, and writes again.
    now = await version(api, people.ada, "user")
    r = await api.post(
        "/v1/mod/layers/user/revert", json={"base": now, "version": made[0]}, headers=people.ada
    )
    assert r.status == 200, await r.text()
    assert (await write(api, people.ada, "user", hides[:64])).status == 200


async def test_a_setting_s_value_and_an_op_s_names_are_bounded(api, people):
    m = weather(id_="notes")
    m["contributes"]["settings"] = [
        {"id": "sign-off", "title": "Sign-off", "scope": "user", "schema": {"type": "string"}}
    ]
    r = await install(api, people.ada, m)
    assert r.status == 201, await r.text()
    sign_off = {"op": "set", "kind": "settings", "id": "acme/notes/sign-off"}
    assert (await write(api, people.ada, "user", [{**sign_off, "value": "x" * 500}])).status == 200
    r = await write(api, people.ada, "user", [HIDE_BOARD, {**sign_off, "value": "x" * 600}])
    assert await refusal(r) == (422, "patch-invalid")
    body = await r.json()
    assert body["index"] == 1 and f"at most {VALUE_MOST} bytes" in body["detail"]

    long_id = {"op": "hide", "kind": "apps", "id": "hanzo/chat/" + "c" * 5000}
    r = await write(api, people.ada, "user", [long_id])
    assert await refusal(r) == (422, "invalid-request")
    assert "$.ops[0].id" in (await r.json())["detail"]


async def test_installs_asked_at_once_never_pass_the_layer_s_share_together(api, people):
    """Ten installs at once by the org's admin, each within the org's share alone, four at
    most together: each is decided on the layer as it stands when it lands. Decided on the
    layer as each read it, all ten landed, past what the bus carries."""
    answers = await asyncio.gather(
        *(install(api, people.root, crowded(i, 2000)) for i in range(10))
    )
    statuses = sorted(r.status for r in answers)
    kinds = {(await refusal(r))[1] for r in answers if r.status != 201}
    assert set(statuses) <= {201, 409} and kinds <= {"surface-full"}, statuses
    assert 1 <= statuses.count(201) <= 4
    found, size = await surface_of(api, people.bob)
    org = [e for e in found["entries"] if e["layer"] == "org"]
    assert len(org) == 2000 * statuses.count(201)
    assert size < MAX_PAYLOAD
