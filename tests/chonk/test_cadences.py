"""A cadence through the running services: cad_owner_update, Chonksworth's weekly owner
update at Monday 07:00 in Los Angeles. Started, its first time is a timer on the scheduler;
when it fires (delivered twice) the update runs once, triggered by the cadence, and the
next Monday is timed."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import msgspec

from libs.audit.reading import records
from libs.contracts import scheduler
from libs.contracts.streams import timer_subject
from services.chonk.domain.cadences import Cadence, next_at
from services.chonk.running import RUN_LEASE
from tests.chonk.conftest import (
    ORG,
    cadence_timer,
    deliver_cadence,
    fire_cadence,
    owner_update,
    person,
    report_of,
)
from tests.personal.conftest import eventually, problem

ROOT, BEN = person("priya", roles=("admin",)), person("ben")
WEEKLY = Cadence(run="owner_update", at=time(7), zone="America/Los_Angeles", weekday=0)


async def _timer(operator, key: str) -> dict:
    get = msgspec.json.encode(scheduler.GetTimer(key=key))
    reply = await operator.request(scheduler.GET.published_by("chonk"), get, timeout=5)
    return msgspec.json.decode(reply.data)


async def test_a_cadence_runs_its_run_each_time_it_comes_round_and_times_the_next(api, operator):
    before = datetime.now(UTC)
    r = await api.post(
        "/v1/chonk/cadences", json={"tenant": ORG, "cadence": "cad_owner_update"}, headers=ROOT
    )
    assert r.status == 201, await r.text()
    started = await r.json()
    due = datetime.fromisoformat(started["next_at"])
    assert next_at(WEEKLY, before) <= due <= next_at(WEEKLY, datetime.now(UTC))
    local = due.astimezone(ZoneInfo("America/Los_Angeles"))
    assert (local.weekday(), local.hour, local.minute) == (0, 7, 0)
    assert (started["run"], started["timer"]) == ("owner_update", cadence_timer(due))
    held = await _timer(operator, started["timer"])
    assert (held["target"], held["state"]) == ("cadence", "pending")

    fired = scheduler.Fired(
        owner="chonk", key=held["key"], target="cadence", due_at=due, fired_at=due,
        late_ms=0.0, payload=held["payload"],
    )  # fmt: skip
    for _ in range(2):  # a redelivery runs nothing more
        await operator.jetstream().publish(
            timer_subject("chonk", "cadence"), msgspec.json.encode(fired)
        )
    run_id = owner_update(due)
    report = await eventually(lambda: report_of(api, run_id))
    assert (report["chonk"], report["trigger"], report["correlation"]) == (
        "chonksworth", "cadence", run_id
    )  # fmt: skip
    assert report["message"].startswith("Morning, Priya. Walk with me.")

    following = next_at(WEEKLY, due)
    assert (following - due).days == 7
    held = await eventually(lambda: _pending(operator, cadence_timer(following)))
    assert datetime.fromisoformat(held["due_at"]) == following
    runs = [
        x for x in await records(operator.jetstream(), ORG)
        if x.action == "chonk.run" and x.target == run_id
    ]  # fmt: skip
    assert len(runs) == 1


async def test_a_run_whose_claimer_died_mid_run_is_run_by_a_later_delivery(api, operator, acks):
    """A replica that claimed the run and died left its claim and no report: once the
    claim's lease is out, a delivery of the timer runs it."""
    due = datetime(2027, 3, 1, 15, tzinfo=UTC)  # a Monday, 07:00 in Los Angeles
    kv = await operator.jetstream().key_value("chonk-runs")
    lapsed = datetime.now(UTC) - RUN_LEASE - timedelta(seconds=1)
    await kv.put(f"claimed.{ORG}.{owner_update(due)}", lapsed.isoformat().encode())
    await deliver_cadence(api, operator, acks, due)
    assert (await report_of(api, owner_update(due)))["trigger"] == "cadence"


async def test_a_reported_run_is_not_run_again_by_a_delivery_past_its_lease(api, operator, acks):
    """The run reported and its delivery came again more than a minute later (its ack
    was lost with the replica that ran it): the claim, as old as the lease, is not taken
    over, and the run is not made twice. Its claim is kept a week (the default)."""
    due = datetime(2027, 3, 8, 15, tzinfo=UTC)
    run_id, js = owner_update(due), operator.jetstream()
    await deliver_cadence(api, operator, acks, due)
    assert (await report_of(api, run_id))["trigger"] == "cadence"
    claim = await js.get_last_msg("KV_chonk-runs", f"$KV.chonk-runs.claimed.{ORG}.{run_id}")
    assert (claim.headers or {}).get("Nats-TTL") == "604800s"

    kv = await js.key_value("chonk-runs")
    lapsed = datetime.now(UTC) - RUN_LEASE - timedelta(seconds=1)
    await kv.put(f"claimed.{ORG}.{run_id}", lapsed.isoformat().encode())
    await deliver_cadence(api, operator, acks, due)
    runs = [x for x in await records(js, ORG) if x.action == "chonk.run" and x.target == run_id]
    assert len(runs) == 1


async def test_only_an_admin_starts_a_cadence_and_only_one_the_tenant_has(api):
    body = {"tenant": ORG, "cadence": "cad_owner_update"}
    r = await api.post("/v1/chonk/cadences", json=body, headers=BEN)
    assert await problem(r) == (403, "admin-only")
    r = await api.post("/v1/chonk/cadences", json={**body, "cadence": "cad_never"}, headers=ROOT)
    assert await problem(r) == (404, "cadence-not-found")


async def _pending(operator, key: str) -> dict | None:
    held = await _timer(operator, key)
    return held if held.get("state") == "pending" else None


async def test_a_stopped_cadence_runs_nothing_when_its_time_comes_round(api, operator, acks):
    """Before, a cadence ran until its timer was cancelled, and nothing could cancel it."""
    start = {"tenant": ORG, "cadence": "cad_owner_update"}
    first = await (await api.post("/v1/chonk/cadences", json=start, headers=ROOT)).json()
    again = await (await api.post("/v1/chonk/cadences", json=start, headers=ROOT)).json()
    assert again == first  # started once: asked again, answered as it runs
    listed = await (await api.get("/v1/chonk/cadences", headers=ROOT)).json()
    assert listed == {"cadences": [first]}

    stopped = await api.delete("/v1/chonk/cadences/cad_owner_update", headers=ROOT)
    assert stopped.status == 200, await stopped.text()
    assert await stopped.json() == {"cadence": "cad_owner_update", "was_running": True}
    assert (await _timer(operator, first["timer"]))["state"] == "canceled"
    assert await (await api.get("/v1/chonk/cadences", headers=ROOT)).json() == {"cadences": []}
    js = operator.jetstream()
    stops = [x for x in await records(js, ORG) if x.action == "chonk.cadence.stop"]
    assert [(x.target, x.actor.sub) for x in stops][-1:] == [("cad_owner_update", f"{ORG}/priya")]

    # A time that was already on its way when it stopped: handled, and nothing runs.
    due = datetime(2027, 3, 15, 14, tzinfo=UTC)  # a Monday, 07:00 in Los Angeles
    await fire_cadence(operator, acks, due)
    assert await report_of(api, owner_update(due)) is None
    assert (await _timer(operator, cadence_timer(next_at(WEEKLY, due)))).get("state") is None
    again = await api.delete("/v1/chonk/cadences/cad_owner_update", headers=ROOT)
    assert await again.json() == {"cadence": "cad_owner_update", "was_running": False}

    # Started again, it runs from then.
    restarted = await (await api.post("/v1/chonk/cadences", json=start, headers=ROOT)).json()
    assert restarted["since"] > first["since"]
    assert (await _timer(operator, restarted["timer"]))["state"] == "pending"


async def test_only_an_admin_reads_or_stops_cadences_and_only_the_tenant_s(api):
    assert await problem(await api.get("/v1/chonk/cadences", headers=BEN)) == (403, "admin-only")
    r = await api.delete("/v1/chonk/cadences/cad_owner_update", headers=BEN)
    assert await problem(r) == (403, "admin-only")
    r = await api.delete("/v1/chonk/cadences/cad_never", headers=ROOT)
    assert await problem(r) == (404, "cadence-not-found")


async def test_a_cadence_whose_next_time_is_not_timed_yet_is_stopped_all_the_same(api, operator):
    """Its time under way (run, the next not yet timed), or its start's replica dead before
    it timed the first: the stop finds no timer to cancel, and is no less a stop."""
    start = {"tenant": ORG, "cadence": "cad_owner_update"}
    started = await (await api.post("/v1/chonk/cadences", json=start, headers=ROOT)).json()
    timers = await operator.jetstream().key_value("scheduler-timers")
    await timers.purge(f"chonk.{started['timer']}")  # as though it never was timed
    stopped = await api.delete("/v1/chonk/cadences/cad_owner_update", headers=ROOT)
    assert stopped.status == 200, await stopped.text()
    assert (await stopped.json())["was_running"] is True
