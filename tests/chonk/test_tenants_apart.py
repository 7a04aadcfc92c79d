"""Two tenants may name their runs alike: a run's id is its tenant's own. What one tenant's
run times, says and publishes under its id touches nothing of the other's. Before:

- a chase's stage timers were keyed by the run alone, so a second tenant's chase replaced
  the first's pending stage with its own (the first was never chased again);
- its words, keyed alike, were refused 422 for the first tenant's key;
- an event keyed by a handoff's or an action's id (`hnd_<run>_<i>`, `ready-<run>-<i>`)
  was dropped as a duplicate of the other tenant's, published within two minutes, so
  one of them never heard that its handoff was decided, or that its action was ready.
"""

import uuid
from datetime import UTC, datetime

import msgspec

from libs.contracts import chonk, scheduler
from tests.chonk.conftest import HARBOR, ORG, cancelled, fire, own_chase
from tests.support import published_from_now

OTHER = "sim-othertenant"


async def _pending(operator, run: str) -> list[dict]:
    """The chonk service's pending timers of chases of run `run`, whoever's."""
    listed = msgspec.json.encode(scheduler.ListTimers(prefix="chase."))
    reply = await operator.request(scheduler.LIST.published_by("chonk"), listed, timeout=5)
    timers = msgspec.json.decode(reply.data)["timers"]
    return [t for t in timers if t["state"] == "pending" and t["payload"]["run"] == run]


async def test_two_tenants_chases_of_one_run_id_each_keep_their_next_stage(
    api, operator, chonk_service, acks
):
    ours = own_chase("apart")
    theirs = msgspec.structs.replace(
        ours, org=OTHER, owner=f"{OTHER}/ben", requester=f"{OTHER}/ana", mor=f"{OTHER}/tomas"
    )
    try:
        for chase in (ours, theirs):
            key = f"chase.{chase.org}.{chase.run}.1"
            _, stored = await fire(
                operator, key, "chase", datetime.now(UTC), msgspec.to_builtins(chase)
            )
            await acks.done("chonk", stored)  # stage 1 said, its stage 2 timed
        pending = await _pending(operator, ours.run)
        found = sorted((t["payload"]["org"], t["payload"]["stage"]) for t in pending)
        assert found == sorted([(ours.org, 2), (OTHER, 2)])
    finally:
        await cancelled(operator, *(t["key"] for t in await _pending(operator, ours.run)))


async def test_two_tenants_handoffs_of_one_id_are_each_decided_on_the_bus(
    api, operator, chonk_service, acks
):
    handoff = f"hnd_run_apart_{uuid.uuid4().hex[:8]}_0"
    js = operator.jetstream()
    decided = await published_from_now(js, "tether.evt.chonk.handoff.*")
    for org in (ORG, HARBOR):
        request = chonk.HandoffRequest(
            id=handoff, tenant_id=org, from_chonk="build", to_chonk="human",
            reason="people_problem", subject_refs=(f"{org}/nobody",),
            requested_action="A check-in about load.", receipt_id="rcpt_apart",
            correlation_id="run_apart", created_by_run_id="run_apart",
        )  # fmt: skip
        stored = await js.publish(chonk.HANDOFF_REQUESTED.name, msgspec.json.encode(request))
        await acks.done("chonk", stored)

    tenants = []
    while len(tenants) < 2:
        event = msgspec.json.decode((await decided.next_msg(timeout=10)).data)
        if (judged := event.get("request", {})).get("id") == handoff:  # not a request
            tenants.append(judged["tenantId"])
    assert sorted(tenants) == sorted([ORG, HARBOR])
