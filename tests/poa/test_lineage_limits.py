"""Issue 10.1: an act is charged to every grant of its lineage at once, so siblings together
never pass an ancestor's monthly, daily or per-act limit."""

import asyncio
import copy
from decimal import Decimal

import pytest

from libs.contracts.poa import CONTRACT
from tests.poa.conftest import decided, root_grant
from tests.poa.vectors import case
from tests.support import bearer, token

AGENT = "urn:example:agent:a_456"
HELPER = "urn:bot0:agent:cd57c917699dcea2af95"
SIBLINGS, ACTS = 10, 200


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(CONTRACT,))


async def _tree(api, org: str, *, daily_cap: int) -> tuple[str, dict, dict]:
    user = f"{org}/ada"
    me = bearer(token(org=org, user=user))
    agent = bearer(token(org=org, user=user, act=AGENT))
    helper = bearer(token(org=org, user=user, act=HELPER))
    grant = root_grant(user)
    grant["defaults"]["max_binding_per_day"] = daily_cap
    issued = await api.post("/v1/poa/grants", json={"grant": grant}, headers=me)
    assert issued.status == 201, await issued.text()
    for i in range(SIBLINGS):
        child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
        child["principal"]["sub"] = user
        child["grant_id"] = f"sibling_{i}"
        child["defaults"]["max_binding_per_day"] = daily_cap
        made = await api.post(
            "/v1/poa/grants/poa_8c21/children", json={"child": child}, headers=agent
        )
        assert made.status == 201, await made.text()
    return user, me, helper


async def _flood(api, helper: dict) -> list[dict]:
    envelope = case("verification", "child_within_parent")["envelope"]
    envelope = copy.deepcopy(envelope)
    envelope["invocation"]["arguments"]["amount"] = 20  # each child's per-act limit

    async def act(i: int) -> dict:
        grant = f"sibling_{i % SIBLINGS}"
        status, outcome = await decided(api, grant, envelope, helper, f"flood-{i}")
        asks = outcome["decision"]["decision"] == "ASK_USER"
        assert status == (202 if asks else 200), outcome
        return outcome

    return await asyncio.gather(*(act(i) for i in range(ACTS)))


async def test_siblings_together_never_pass_the_roots_daily_binding_acts(api, org):
    """The official grant allows 5 binding acts a day; so does each child. Ten children
    acting 200 times at once get 5 ALLOWs between them, not 50."""
    _, _, helper = await _tree(api, org, daily_cap=5)
    outcomes = await _flood(api, helper)
    allowed = [o for o in outcomes if o["decision"]["decision"] == "ALLOW"]
    refused = {(o["decision"]["decision"], o["decision"]["rule_id"]) for o in outcomes} - {
        ("ALLOW", "standing_within_limits")
    }
    assert len(allowed) == 5
    assert all(o["recorded"] for o in allowed)
    assert refused == {("ASK_USER", "over_daily_binding_acts")}


async def test_siblings_together_never_pass_the_roots_monthly_total(api, org):
    """With the daily caps out of the way, $20 acts stop at the root's $800 a month: 40 of
    them across all ten children, whatever each child's own month says."""
    _, _, helper = await _tree(api, org, daily_cap=1000)
    outcomes = await _flood(api, helper)
    allowed = [o for o in outcomes if o["decision"]["decision"] == "ALLOW"]
    asked = {o["decision"]["rule_id"] for o in outcomes if o["decision"]["decision"] != "ALLOW"}
    assert len(allowed) * 20 == 800
    assert sum(Decimal(o["spent_month_usd"]) for o in allowed) > 0
    assert asked == {"over_monthly_limit"}
