"""Timers on a real nats-server: fire once, cancel for good, replace, refuse bad input."""

import asyncio
import random
from collections import Counter
from datetime import timedelta

import msgspec
from prometheus_client import REGISTRY

from libs.contracts.principal import REQUEST_ID_HEADER
from libs.runtime.bus import flushed
from tests.scheduler.conftest import now, problem


async def test_a_timer_fires_once_at_its_due_time_with_its_payload(owner, org):
    due = now() + timedelta(seconds=1)
    await owner.schedule(f"{org}.a", due, {"hello": "world"})
    fired = await owner.fired(org)
    assert [(f.key, f.target, f.payload, f.due_at) for f in fired] == [
        (f"{org}.a", "ping", {"hello": "world"}, due)
    ]
    assert fired[0].late_ms >= 0  # how late is a figure for bench/, not a test
    _, timer = await owner.ask("get", {"key": f"{org}.a"})
    assert (timer["state"], timer["late_ms"]) == ("fired", fired[0].late_ms)


async def test_a_canceled_timer_never_fires(owner, org):
    await owner.schedule(f"{org}.a", now() + timedelta(seconds=1))
    status, answer = await owner.ask("cancel", {"key": f"{org}.a"})
    assert (status, answer) == (None, {"key": f"{org}.a", "outcome": "canceled"})
    assert await owner.fired(org) == []
    _, timer = await owner.ask("get", {"key": f"{org}.a"})
    assert timer["state"] == "canceled"


async def test_cancel_after_the_fire_is_too_late(owner, org):
    await owner.schedule(f"{org}.a", now() + timedelta(milliseconds=400))
    assert len(await owner.fired(org)) == 1
    _, answer = await owner.ask("cancel", {"key": f"{org}.a"})
    assert answer["outcome"] == "too_late"


async def test_scheduling_a_pending_key_again_replaces_it(owner, org):
    await owner.schedule(f"{org}.a", now() + timedelta(milliseconds=700), "first")
    await owner.schedule(f"{org}.a", now() + timedelta(milliseconds=1200), "second")
    fired = await owner.fired(org)
    assert [f.payload for f in fired] == ["second"]


async def test_a_timer_due_now_fires_at_once(owner, org):
    # Due within the engine's arming lead (300 ms), so it is armed as it is taken; not
    # sooner than a busy machine takes to carry the request (one due in 50 ms could be
    # refused as past before the scheduler read it).
    await owner.schedule(f"{org}.a", now() + timedelta(milliseconds=250))
    assert len(await owner.fired(org)) == 1


async def test_bad_input_is_a_clear_problem_and_stores_nothing(owner, org):
    future = (now() + timedelta(minutes=1)).isoformat()
    cases = {
        "due-in-past": {"key": f"{org}.a", "due_at": "2020-01-01T00:00:00Z", "target": "ping"},
        "unknown-target": {"key": f"{org}.b", "due_at": future, "target": "elsewhere"},
        "payload-too-large": {"key": f"{org}.c", "due_at": future, "target": "ping",
                              "payload": "x" * 70_000},
        "invalid-request": {"key": f"{org}.has space", "due_at": future, "target": "ping"},
    }  # fmt: skip
    for rule, body in cases.items():
        status, reply = await owner.ask("schedule", body)
        assert (status, problem(reply).rule) == (problem(reply).status, rule)
    status, listed = await owner.ask("list", {"prefix": org})
    assert listed == {"timers": []}


async def test_timers_are_listed_by_key_prefix(owner, org):
    for key in ("x.1", "x.2", "y.1"):
        await owner.schedule(f"{org}.{key}", now() + timedelta(minutes=10))
    _, listed = await owner.ask("list", {"prefix": f"{org}.x"})
    assert sorted(t["key"] for t in listed["timers"]) == [f"{org}.x.1", f"{org}.x.2"]
    for key in ("x.1", "x.2", "y.1"):
        await owner.ask("cancel", {"key": f"{org}.{key}"})


async def test_the_resolution_is_measured_from_fires(owner, org):
    counted = _late_seconds()
    for i in range(5):
        await owner.schedule(f"{org}.{i}", now() + timedelta(milliseconds=300 + 50 * i))
    fired = await owner.fired(org)
    _, resolution = await owner.ask("resolution", {})
    assert resolution["samples"] >= 5
    assert resolution["resolution_ms"] >= max(1.0, resolution["p99_ms"])
    # And each fire's lateness in the histogram an operator scrapes (the replica runs in
    # this process; its own probes' fires are counted too).
    (count, total), (count_before, total_before) = _late_seconds(), counted
    count, total = count - count_before, total - total_before
    assert count >= 5 and total >= sum(f.late_ms for f in fired) / 1000 - 1e-9


def _late_seconds() -> tuple[float, float]:
    def sample(name: str) -> float:
        return REGISTRY.get_sample_value(f"tether_scheduler_late_seconds_{name}") or 0.0

    return sample("count"), sample("sum")


async def test_a_thousand_cancels_race_a_thousand_fires(owner, org):
    """Each cancel is sent between 15 ms before and 5 ms after its timer's due instant, so
    some win and some lose. Every `canceled` answer is a timer that never reached its
    owner; every other timer reached it exactly once."""
    start = now() + timedelta(seconds=2)
    due = {f"{org}.{i}": start + timedelta(milliseconds=3 * i) for i in range(1000)}
    keys = list(due)
    for first in range(0, 1000, 100):
        await asyncio.gather(*(owner.schedule(k, due[k]) for k in keys[first : first + 100]))

    jitter = {k: timedelta(milliseconds=random.uniform(-15, 5)) for k in keys}

    async def cancel_at_due(key: str) -> str:
        await asyncio.sleep(max(0.0, (due[key] + jitter[key] - now()).total_seconds()))
        _, answer = await owner.ask("cancel", {"key": key})
        return answer["outcome"]

    outcomes = dict(zip(keys, await asyncio.gather(*map(cancel_at_due, keys)), strict=True))
    delivered = Counter(f.key for f in await owner.fired(org))
    canceled = {k for k, o in outcomes.items() if o == "canceled"}
    assert not canceled & delivered.keys()
    assert dict(delivered) == {k: 1 for k in keys if k not in canceled}
    assert canceled and delivered  # the race really went both ways


async def test_handled_due_messages_are_purged_and_pending_ones_kept(owner, connect, org):
    from services.scheduler.store import open_store

    await owner.schedule(f"{org}.soon", now() + timedelta(milliseconds=300))
    await owner.schedule(f"{org}.later", now() + timedelta(minutes=5))
    assert len(await owner.fired(f"{org}.soon")) == 1
    async with connect("scheduler") as nc:
        js = nc.jetstream()
        _, engine = await open_store(js)
        await engine.forget_handled("scheduler")
        info = await js.stream_info("SCHEDULER", subjects_filter=">")
    subjects = info.state.subjects or {}
    assert not any(s.startswith("scheduler.due.") for s in subjects)
    assert any(s.startswith(f"scheduler.at.echo.{org}.later.") for s in subjects)
    await owner.ask("cancel", {"key": f"{org}.later"})


async def test_an_owner_can_only_ask_under_its_own_name(connect):
    """The owner is proven by the NATS credential: echo cannot reach another's timers."""
    seen: list[str] = []

    async def on_error(exc: Exception) -> None:
        seen.append(str(exc))

    async with connect("echo", error_cb=on_error) as nc:
        await nc.publish("tether.scheduler.get.poa", b'{"key": "k"}')
        await flushed(nc)  # the server's error comes before the pong of what follows it
    assert seen == ['nats: permissions violation for publish to "tether.scheduler.get.poa"']


async def test_a_timer_fires_under_the_request_that_timed_it(owner, org):
    """A timer scheduled for a request (a window opened by a person's post, say) is
    delivered with that request's id, so its owner handles the fire under it and its log
    lines say which request set it going."""
    body = {"key": f"{org}.traced", "due_at": (now() + timedelta(milliseconds=300)).isoformat(),
            "target": "ping"}  # fmt: skip
    await owner.nc.request(
        "tether.scheduler.schedule.echo", msgspec.json.encode(body), timeout=10,
        headers={REQUEST_ID_HEADER: "req-timed"},
    )  # fmt: skip
    assert [f.key for f in await owner.fired(org)] == [f"{org}.traced"]
    last = await owner.nc.jetstream().get_last_msg("TIMERS", "tether.timer.echo.ping")
    assert msgspec.json.decode(last.data)["key"] == f"{org}.traced"
    assert (last.headers or {}).get(REQUEST_ID_HEADER) == "req-timed"
