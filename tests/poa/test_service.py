"""The poa service through the gateway, on a real bus and store."""

import asyncio
import copy
from decimal import Decimal

import pytest

from libs.audit.chain import breaks
from libs.audit.reading import records as audit_records
from libs.audit.reading import stored
from libs.contracts.poa import CONTRACT
from libs.runtime.pages import PAGE_BYTES
from tests.poa.conftest import decided, purchase, root_grant
from tests.poa.vectors import OFFICIAL, case
from tests.support import bearer, token

AGENT = "urn:example:agent:a_456"
HELPER = "urn:bot0:agent:cd57c917699dcea2af95"


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(CONTRACT,))


@pytest.fixture
def ada(org):
    """Ada, a member of a fresh org, as herself and as her shopping agent."""
    user = f"{org}/ada"
    return {
        "user": user,
        "me": bearer(token(org=org, user=user)),
        "agent": bearer(token(org=org, user=user, act=AGENT)),
        "helper": bearer(token(org=org, user=user, act=HELPER)),
    }


async def _issue(api, ada, grant=None):
    response = await api.post("/v1/poa/grants", json={"grant": grant or root_grant(ada["user"])},
                              headers=ada["me"])  # fmt: skip
    assert response.status == 201, await response.text()
    return await response.json()


async def _problem(response) -> tuple[int, str]:
    body = await response.json(content_type=None)
    return response.status, body["type"].rsplit(":", 1)[-1]


@pytest.mark.parametrize("vector", OFFICIAL["verification"], ids=lambda v: v["id"])
async def test_stateless_verify_over_http_passes_every_official_vector(api, ada, vector):
    body = {k: vector[k] for k in ("grant", "parents", "envelope", "state")}
    response = await api.post("/v1/poa/verify", json=body, headers=ada["me"])
    decided = await response.json()
    assert {"decision": decided["decision"], "rule_id": decided["rule_id"]} == vector["expect"]


@pytest.mark.parametrize("vector", OFFICIAL["containment"], ids=lambda v: v["id"])
async def test_stateless_contain_over_http_passes_every_official_vector(api, ada, vector):
    body = {"parent": vector["parent"], "child": vector["child"]}
    result = await (await api.post("/v1/poa/contain", json=body, headers=ada["me"])).json()
    assert {"ok": result["ok"], "violations": result["violations"]} == vector["expect"]


async def test_a_person_issues_a_grant_in_their_own_name(api, ada):
    record = await _issue(api, ada)
    assert (record["id"], record["owner"], record["delegate"], record["revoked"]) == (
        "poa_8c21", ada["user"], AGENT, False
    )  # fmt: skip
    listed = await (await api.get("/v1/poa/grants", headers=ada["me"])).json()
    assert [g["id"] for g in listed["grants"]] == ["poa_8c21"]


async def test_my_grants_come_in_pages_each_of_which_the_bus_carries(api, ada):
    """A grant is free-form JSON up to 64 KiB: 200 of them would be 13 MB, so a page ends
    before 512 KiB as well as at its limit."""
    issued = [f"g{i:02}" for i in range(20)]
    for grant_id in issued:
        grant = root_grant(ada["user"]) | {"grant_id": grant_id, "note": "x" * 60_000}
        made = await api.post("/v1/poa/grants", json={"grant": grant}, headers=ada["me"])
        assert made.status == 201, await made.text()
    pages, after = [], None
    while True:
        query = {"limit": "200"} | ({"after": after} if after else {})
        listed = await api.get("/v1/poa/grants", params=query, headers=ada["me"])
        assert len(await listed.read()) <= PAGE_BYTES + 1024
        page = await listed.json()
        pages.append([g["id"] for g in page["grants"]])
        if (after := page["next"]) is None:
            break
    assert len(pages) > 1 and [i for page in pages for i in page] == issued
    nobodys = await api.get("/v1/poa/grants", params={"after": "nobodys"}, headers=ada["me"])
    assert await nobodys.json() == {"grants": [], "next": None}


async def test_a_grant_or_an_envelope_past_64_kib_is_refused_naming_its_size(api, ada):
    grant = root_grant(ada["user"]) | {"note": "x" * 70_000}
    refused = await api.post("/v1/poa/grants", json={"grant": grant}, headers=ada["me"])
    body = await refused.json()
    assert (refused.status, body["type"]) == (422, "urn:tether:problem:grant-too-large")
    assert body["detail"].startswith("a grant is at most 65,536 bytes of JSON; this one is 7")
    await _issue(api, ada)
    envelope = purchase()
    envelope["invocation"]["arguments"]["note"] = "x" * 70_000
    acted = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": envelope}, headers=ada["agent"]
    )
    assert await _problem(acted) == (422, "envelope-too-large")


async def test_a_grant_in_another_persons_name_is_refused(api, ada, org):
    grant = root_grant(f"{org}/bob")
    response = await api.post("/v1/poa/grants", json={"grant": grant}, headers=ada["me"])
    assert await _problem(response) == (403, "grant-not-yours")


async def test_an_agent_cannot_issue_a_grant(api, ada, org):
    own_agent = bearer(token(org=org, user=ada["user"], act=f"agent:{ada['user']}"))
    response = await api.post("/v1/poa/grants", json={"grant": root_grant(ada["user"])},
                              headers=own_agent)  # fmt: skip
    assert await _problem(response) == (403, "agent-cannot-issue")
    delegate = await api.post("/v1/poa/grants", json={"grant": root_grant(ada["user"])},
                              headers=ada["agent"])  # fmt: skip
    assert await _problem(delegate) == (403, "delegate-not-admitted")


async def test_a_grant_id_is_issued_once(api, ada):
    await _issue(api, ada)
    again = await api.post("/v1/poa/grants", json={"grant": root_grant(ada["user"])},
                           headers=ada["me"])  # fmt: skip
    assert await _problem(again) == (409, "grant-exists")


async def test_nobody_else_finds_a_grant(api, ada, org):
    await _issue(api, ada)
    others = {
        "another member": bearer(token(org=org, user=f"{org}/bob")),
        "an org admin": bearer(token(org=org, user=f"{org}/root", roles=["admin"])),
        "another org's member": bearer(token(org=f"{org}-x", user=f"{org}-x/ada")),
    }
    for who, headers in others.items():
        got = await api.get("/v1/poa/grants/poa_8c21", headers=headers)
        assert await _problem(got) == (404, "grant-not-found"), who
        listed = await (await api.get("/v1/poa/grants", headers=headers)).json()
        assert listed == {"grants": [], "next": None}, who
        act = await api.post("/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase()},
                             headers=headers)  # fmt: skip
        assert await _problem(act) == (404, "grant-not-found"), who


async def test_an_allowed_act_is_recorded_in_the_ledger(api, ada):
    await _issue(api, ada)
    response = await api.post("/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(40)},
                              headers=ada["agent"])  # fmt: skip
    outcome = await response.json()
    assert outcome == {
        "decision": {
            "decision": "ALLOW",
            "rule_id": "standing_within_limits",
            "act_id": "shop.buy",
        },
        "recorded": True,
        "spent_month_usd": "40",
        "binding_acts_today": 1,
    }


async def test_an_act_over_a_limit_asks_and_is_not_recorded(api, ada):
    await _issue(api, ada)
    response = await api.post("/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(140)},
                              headers=ada["agent"])  # fmt: skip
    outcome = await response.json()
    assert (outcome["decision"]["rule_id"], outcome["recorded"], outcome["spent_month_usd"]) == (
        "over_per_act_limit", False, "0"
    )  # fmt: skip


async def test_the_envelope_must_name_the_calling_agent(api, ada):
    await _issue(api, ada)
    forged = purchase(40, actor="urn:example:agent:someone-else")
    response = await api.post("/v1/poa/grants/poa_8c21/acts", json={"envelope": forged},
                              headers=ada["agent"])  # fmt: skip
    assert await _problem(response) == (403, "actor-not-caller")


async def test_concurrent_purchases_never_pass_the_monthly_limit_without_asking(api, ada):
    grant = root_grant(ada["user"])
    grant["defaults"]["max_binding_per_day"] = 1000
    await _issue(api, ada, grant)

    async def buy(i: int) -> dict:
        _, outcome = await decided(api, "poa_8c21", purchase(99.99), ada["agent"], f"buy-{i}")
        return outcome

    outcomes = await asyncio.gather(*(buy(i) for i in range(30)))
    recorded = [o for o in outcomes if o["recorded"]]
    asked = {o["decision"]["rule_id"] for o in outcomes if not o["recorded"]}
    assert len(recorded) == 8  # 8 x 99.99 = 799.92; a ninth would pass 800
    assert asked == {"over_monthly_limit"}
    assert max(Decimal(o["spent_month_usd"]) for o in recorded) == Decimal("799.92")


async def test_a_delegate_makes_a_contained_child_and_its_delegate_acts_on_it(api, ada):
    await _issue(api, ada)
    child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
    child["principal"]["sub"] = ada["user"]
    made = await api.post("/v1/poa/grants/poa_8c21/children", json={"child": child},
                          headers=ada["agent"])  # fmt: skip
    assert made.status == 201, await made.text()
    envelope = case("verification", "child_within_parent")["envelope"]
    act = await api.post(f"/v1/poa/grants/{child['grant_id']}/acts", json={"envelope": envelope},
                         headers=ada["helper"])  # fmt: skip
    outcome = await act.json()
    assert (outcome["decision"]["rule_id"], outcome["recorded"]) == ("standing_within_limits", True)


async def test_a_child_that_is_not_contained_is_refused_with_its_violations(api, ada):
    await _issue(api, ada)
    child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
    child["principal"]["sub"] = ada["user"]
    child["authorities"][0]["limits"]["transaction_amount_lte"] = 500
    child["validity"]["expires"] = "2027-01-01"
    response = await api.post("/v1/poa/grants/poa_8c21/children", json={"child": child},
                              headers=ada["agent"])  # fmt: skip
    problem = await response.json(content_type=None)
    assert (response.status, problem["errors"]) == (
        422, ["expires_wider", "limit_raised:shop.buy.transaction_amount_lte"]
    )  # fmt: skip


async def test_only_the_parents_delegate_delegates(api, ada):
    await _issue(api, ada)
    child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
    child["principal"]["sub"] = ada["user"]
    for headers in (ada["me"], ada["helper"]):
        response = await api.post("/v1/poa/grants/poa_8c21/children", json={"child": child},
                                  headers=headers)  # fmt: skip
        assert await _problem(response) == (403, "not-the-delegate")


async def test_revoking_a_grant_revokes_its_descendants_at_once(api, ada):
    await _issue(api, ada)
    child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
    child["principal"]["sub"] = ada["user"]
    await api.post("/v1/poa/grants/poa_8c21/children", json={"child": child}, headers=ada["agent"])
    revoked = await api.post("/v1/poa/grants/poa_8c21/revoke", json={}, headers=ada["me"])
    assert (await revoked.json())["revoked"] is True
    envelope = case("verification", "child_within_parent")["envelope"]
    act = await api.post(f"/v1/poa/grants/{child['grant_id']}/acts", json={"envelope": envelope},
                         headers=ada["helper"])  # fmt: skip
    outcome = await act.json()
    assert (outcome["decision"]["decision"], outcome["decision"]["rule_id"]) == ("DENY", "revoked")
    listed = await (await api.get("/v1/poa/grants", headers=ada["me"])).json()
    assert {g["id"]: g["revoked"] for g in listed["grants"]} == {
        "poa_8c21": True, child["grant_id"]: True
    }  # fmt: skip


async def test_a_grant_revoked_again_is_answered_as_it_stands_and_recorded_once(
    api, ada, org, operator
):
    await _issue(api, ada)
    first = await api.post("/v1/poa/grants/poa_8c21/revoke", json={}, headers=ada["me"])
    again = await api.post("/v1/poa/grants/poa_8c21/revoke", json={}, headers=ada["me"])
    assert (first.status, again.status) == (200, 200)
    assert await again.json() == await first.json()
    records = await audit_records(operator.jetstream(), org)
    assert [r.action for r in records] == ["poa.grant.issue", "poa.grant.revoke"]


async def test_every_decision_on_a_stored_grant_is_on_the_audit_trail(api, ada, org, operator):
    await _issue(api, ada)
    for amount in (40, 140):
        await api.post("/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(amount)},
                       headers=ada["agent"])  # fmt: skip
    records = await audit_records(operator.jetstream(), org)
    assert [(r.action, r.data.get("rule_id")) for r in records] == [
        ("poa.grant.issue", None),
        ("poa.act.record", "standing_within_limits"),
        ("poa.act.decide", "over_per_act_limit"),
        ("poa.ask.open", "over_per_act_limit"),
        # this module's clock stands still in October, so the ask's day has long passed
        ("poa.ask.expire", "ask_expired"),
    ]
    assert breaks([m async for m in stored(operator.jetstream(), org)], org=org) == (5, [])
    assert records[1].actor.act == AGENT
    # No one answered the ask: its timer declined it, and the trail says so, never that
    # the person did.
    assert records[4].actor is None


async def test_a_child_delegated_while_its_parent_is_revoked_is_revoked_with_it(api, ada):
    """Ten delegations and the parent's revocation at once. The revocation lists the
    descendants before it marks them, so a child stored after the listing was stored
    unrevoked: before, each such child read `revoked: false` (while verification, reading
    up the lineage, denied it). A grant reads as it holds."""
    parent = await _issue(api, ada)

    async def delegate(i: int) -> tuple[int, str]:
        child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
        child["principal"]["sub"] = ada["user"]
        child["grant_id"] = f"poa_race{i}"
        response = await api.post(f"/v1/poa/grants/{parent['id']}/children",
                                  json={"child": child}, headers=ada["agent"])  # fmt: skip
        return response.status, child["grant_id"]

    async def revoke() -> tuple[int, str]:
        response = await api.post(f"/v1/poa/grants/{parent['id']}/revoke", json={},
                                  headers=ada["me"])  # fmt: skip
        return response.status, parent["id"]

    done = await asyncio.gather(*map(delegate, range(10)), revoke())
    made = [grant for status, grant in done[:-1] if status == 201]
    assert done[-1][0] == 200 and {s for s, _ in done[:-1]} <= {201, 409}
    listed = await (await api.get("/v1/poa/grants", headers=ada["me"])).json()
    assert {g["id"]: g["revoked"] for g in listed["grants"]} == dict.fromkeys(
        [parent["id"], *made], True
    )
    for grant in made:
        one = await (await api.get(f"/v1/poa/grants/{grant}", headers=ada["me"])).json()
        assert one["revoked"] is True and one["revoked_at"] is not None


async def test_what_an_issue_or_a_delegation_made_and_what_an_act_asks_is_where_location_says(
    api, ada
):
    """Before, a 201 named what it made only in its body: a client that follows Location
    (RFC 9110 §10.2.2) found nothing to follow."""
    issued = await api.post(
        "/v1/poa/grants", json={"grant": root_grant(ada["user"])}, headers=ada["me"]
    )
    assert issued.status == 201, await issued.text()
    assert issued.headers["Location"] == "/v1/poa/grants/poa_8c21"
    read = await api.get(issued.headers["Location"], headers=ada["me"])
    assert await read.json() == await issued.json()
    child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
    child["principal"]["sub"] = ada["user"]
    made = await api.post(
        "/v1/poa/grants/poa_8c21/children", json={"child": child}, headers=ada["agent"]
    )
    assert made.status == 201, await made.text()
    assert made.headers["Location"] == f"/v1/poa/grants/{child['grant_id']}"
    asked = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(140)}, headers=ada["agent"]
    )
    outcome = await asked.json()
    assert asked.status == 202, outcome
    assert asked.headers["Location"] == f"/v1/poa/asks/{outcome['ask']}"
    ask = await (await api.get(asked.headers["Location"], headers=ada["me"])).json()
    assert (ask["id"], ask["grant_id"]) == (outcome["ask"], "poa_8c21")
    done = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(40)}, headers=ada["agent"]
    )
    assert done.status == 200 and "Location" not in done.headers  # nothing waits
