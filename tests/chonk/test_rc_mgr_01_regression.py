"""RC-MGR-01 through the running services: the Chief Operating Otter's chaser reaches past
its charter three times in one run; the three are dropped and counted, its functions are
regressed to PROPOSE for the tenant (stored, recorded), and its next run's message waits
for the owner's yes instead of going out."""

from libs.audit.reading import records
from tests.chonk.conftest import ORG, person

ROOT = person("priya", roles=("admin",))


async def _run(api, name: str) -> dict:
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": name}, headers=ROOT)
    assert r.status == 201, await r.text()
    return await r.json()


async def test_rc_mgr_01_three_outside_in_a_week_regress_the_chonk_to_propose(api, operator):
    creeping = await _run(api, "ops_creeping")
    assert creeping["regressed"] is True
    # Decided before the regression: this run's own message still went out.
    assert [(a["kind"], a["class"]) for a in creeping["actions"]] == [
        ("SEND_MESSAGE:ic_thread", "AUTONOMOUS")
    ]
    after = await _run(api, "ops_after")
    assert after["regressed"] is False
    assert [(a["kind"], a["class"]) for a in after["actions"]] == [
        ("SEND_MESSAGE:ic_thread", "PROPOSE_CONFIRM")
    ]
    (held,) = after["delivered"]
    assert (held["class"], held["decider"]) == ("PROPOSE_CONFIRM", f"{ORG}/priya")
    actions = [(x.action, x.target) for x in await records(operator.jetstream(), ORG)]
    assert ("chonk.outside.record", "ops") in actions
    assert ("chonk.modes.regress", "ops") in actions
