"""hip-0528 §2, §3.4, §6.2, §7 through the running services: installs pinned to a digest
with exactly the consented permissions, load order, and review as evidence."""

import pytest

from libs.audit.reading import records
from tests.mod.conftest import install, refusal, weather


async def surface(api, headers: dict) -> dict:
    r = await api.get("/v1/mod/surface", headers=headers)
    assert r.status == 200, await r.text()
    return await r.json()


async def test_hip0528_06_2_an_admin_installs_into_the_org_and_every_member_loads_it(api, people):
    r = await install(api, people.root, weather())
    assert r.status == 201, await r.text()
    installed = await r.json()
    assert (installed["mod"], installed["layer"]) == ("acme/weather", "org")
    for who in (people.ada, people.bob):
        found = await surface(api, who)
        assert found["order"].index("acme/weather") > found["order"].index("hanzo/chat")
        mine = [e for e in found["entries"] if e["id"].startswith("acme/weather/")]
        assert {e["layer"] for e in mine} == {"org"}
        assert {e["kind"] for e in mine} == {"apps", "views", "commands", "settings", "tokens"}
    elsewhere = await surface(api, people.eve)
    assert not [e for e in elsewhere["entries"] if e["id"].startswith("acme/")]


async def test_hip0528_06_2_a_person_installs_their_own_mod_into_their_home_org_only(api, people):
    r = await install(api, people.ada, weather(id_="mine"))
    assert r.status == 201, await r.text()
    assert (await r.json())["layer"] == "user"
    ada = await surface(api, people.ada)
    assert {e["layer"] for e in ada["entries"] if e["id"].startswith("acme/mine/")} == {"user"}
    bob = await surface(api, people.bob)
    assert not [e for e in bob["entries"] if e["id"].startswith("acme/mine/")]


async def test_hip0528_06_2_an_admin_installs_their_own_mod_into_their_own_layer(api, people):
    """An admin is a person too: their own mod goes into their own layer when they name it.
    Before, every install of an admin's went to the org, for every member."""
    r = await install(api, people.root, weather(id_="mine"), layer="user")
    assert r.status == 201, await r.text()
    assert (await r.json())["layer"] == "user"
    root = await surface(api, people.root)
    assert {e["layer"] for e in root["entries"] if e["id"].startswith("acme/mine/")} == {"user"}
    ada = await surface(api, people.ada)
    assert not [e for e in ada["entries"] if e["id"].startswith("acme/mine/")]
    listed = await (await api.get("/v1/mod/installs", headers=people.root)).json()
    assert [(i["mod"], i["layer"]) for i in listed["installs"]] == [("acme/mine", "user")]
    # Uninstalled where it is: unnamed, an admin's uninstall is the org's, which has none.
    org = await api.delete("/v1/mod/installs/acme/mine", headers=people.root)
    assert await refusal(org) == (404, "install-not-found")
    mine = await api.delete("/v1/mod/installs/acme/mine?layer=user", headers=people.root)
    assert mine.status == 200, await mine.text()
    # The org's layer is its admins' alone, named or not.
    assert await refusal(await install(api, people.ada, weather(), layer="org")) == (
        403, "admin-only"
    )  # fmt: skip


async def test_hip0528_06_3_an_agent_may_ask_for_an_install_and_never_make_one(api, people):
    for agent in (people.agent, people.root_agent):
        assert await refusal(await install(api, agent, weather())) == (403, "agent-may-not")


async def test_hip0528_06_2_a_consent_is_exactly_the_manifest_s_permissions(api, people):
    m = weather()
    more = await install(api, people.root, m, permissions=[*m["permissions"], "drive:write"])
    assert await refusal(more) == (422, "consent-exceeds-manifest")
    fewer = await install(api, people.root, m, permissions=m["permissions"][:1])
    assert await refusal(fewer) == (422, "consent-incomplete")
    other = await install(api, people.root, m, digest="sha256:" + "0" * 64)
    assert await refusal(other) == (422, "digest-mismatch")


async def test_hip0528_02_an_install_of_a_bad_manifest_lists_every_reason(api, people):
    bad = weather(permissions=["wallet:pay"], backend={"kind": "goja"})
    bad["contributes"]["gadgets"] = []
    r = await install(api, people.root, bad, permissions=["wallet:pay"])
    assert r.status == 422
    errors = (await r.json())["errors"]
    assert len(errors) == 3 and any("gadgets: no such kind" in e for e in errors)
    hanzo = await install(api, people.root, weather(publisher="hanzo"))
    assert await refusal(hanzo) == (403, "publisher-reserved")


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"type": "string", "minLength": "abc"}, "minLength must be a whole number"),
        ({"type": "integer", "minimum": "5"}, "minimum must be a number"),
        ({"type": "string", "minimum": 3}, "minimum does not apply to a string"),
        ({"type": "integer", "maxLength": 3}, "maxLength does not apply to an integer"),
        ({"type": "integer", "enum": ["a"]}, "enum 'a': the value must be an integer"),
        ({"type": "number", "maximum": True}, "maximum must be a number, not True"),
        ({"type": "string", "minLength": 5, "maxLength": 2}, "minLength 5 is above its"),
        ({"type": {}}, "schema type must be one of"),
    ],
)
async def test_hip0528_02_a_setting_schema_is_checked_whole_at_install(api, people, schema, named):
    """Before, each installed, and every write naming the setting was then a 500 (a bound
    of the wrong kind compared with the value) or refused whatever it held."""
    bad = weather()
    bad["contributes"]["settings"][0]["schema"] = schema
    r = await install(api, people.root, bad)
    assert r.status == 422, await r.text()
    (error,) = (await r.json())["errors"]
    assert named in error
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    value = {"op": "set", "kind": "settings", "id": "acme/weather/units", "value": 3}
    written = await api.post(
        "/v1/mod/layers/user", json={"base": layer["version"], "ops": [value]}, headers=people.ada
    )
    assert await refusal(written) == (422, "patch-invalid")  # no such setting: not installed


async def test_hip0528_02_a_number_setting_takes_a_fraction(api, people):
    """Numbers cross the bus as exact decimals, which the schema did not count as numbers:
    the install was refused ("minimum must be a number, not Decimal('0.5')"), and a value
    of 2.5 could never be set."""
    m = weather()
    schema = {"type": "number", "minimum": 0.5, "maximum": 10, "default": 1.5}
    m["contributes"]["settings"][0]["schema"] = schema
    r = await install(api, people.root, m)
    assert r.status == 201, await r.text()
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    for value, status in ((0.25, 422), (2.5, 200)):
        op = {"op": "set", "kind": "settings", "id": "acme/weather/units", "value": value}
        written = await api.post(
            "/v1/mod/layers/user", json={"base": layer["version"], "ops": [op]}, headers=people.ada
        )
        assert written.status == status, await written.text()
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert composed["settings"]["acme/weather/units"] == 2.5


async def test_hip0528_03_4_a_mod_whose_need_is_never_met_is_left_out_and_named(api, people):
    needy = weather(id_="needy", uses=["acme/nowhere#data"])
    assert (await install(api, people.root, needy)).status == 201
    found = await surface(api, people.ada)
    assert {"mod": "acme/needy", "service": "acme/nowhere#data"} in found["missing"]
    assert "acme/needy" not in found["order"]
    assert not [e for e in found["entries"] if e["id"].startswith("acme/needy/")]


async def test_hip0528_03_4_when_a_provider_leaves_its_users_leave_first(api, people):
    base = weather(id_="base", provides=[{"service": "data"}], uses=[])
    user = weather(id_="reader", uses=["acme/base#data"], provides=[])
    for m in (base, user):
        assert (await install(api, people.root, m)).status == 201
    assert {"acme/base", "acme/reader"} <= set((await surface(api, people.ada))["order"])
    r = await api.delete("/v1/mod/installs/acme/base", headers=people.root)
    assert r.status == 200, await r.text()
    assert (await r.json())["left"] == ["acme/reader", "acme/base"]
    found = await surface(api, people.ada)
    assert {"mod": "acme/reader", "service": "acme/base#data"} in found["missing"]
    again = await api.delete("/v1/mod/installs/acme/base", headers=people.root)
    assert await refusal(again) == (404, "install-not-found")


async def test_hip0528_07_a_verdict_is_evidence_bound_to_the_digest_and_recorded(
    api, people, operator
):
    m = weather()
    installed = await (await install(api, people.root, m)).json()
    verdict = installed["review"]
    assert installed["reviewed"] == "reviewed"
    assert verdict["verdict"] == "hold" and verdict["bundle"] == m["build"]["digest"]
    assert verdict["reviewer"] == "tether-manifest-reader" and verdict["stage"] == "submission"
    assert any("api.weather.example" in r["text"] for r in verdict["reasons"])
    found = await records(operator.jetstream(), people.org)
    assert [r.action for r in found] == ["mod.review.verdict", "mod.install"]
    assert found[0].data["verdict"] == "hold"
