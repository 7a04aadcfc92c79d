"""A keyed request's claim across replicas: two `Replies` over one bucket are two replicas,
with nothing shared but the bucket."""

import asyncio
import time

import msgspec

from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime.replies import Answer, Kept, Replies

REQUEST = b"digest-1"


async def _replicas(nc, *, wait: float) -> tuple[Replies, Replies]:
    await Replies.open(nc.jetstream(), "echo", replicas=1)  # the bucket, as a service makes it
    kv = await nc.jetstream().key_value(REPLIES_BUCKET)
    return Replies(kv, "echo", wait=wait), Replies(kv, "echo", wait=wait)


async def test_two_copies_at_two_replicas_at_once_run_once(connect):
    """The first copy's replica is still running it when the second's asks: the second
    waits and is answered with the first's answer, never running beside it."""
    ran, running, release = [], asyncio.Event(), asyncio.Event()

    async def answer() -> Answer:
        ran.append(1)
        running.set()
        await release.wait()
        return Answer(b'{"made": 1}')

    async with connect("echo") as nc:
        one, two = await _replicas(nc, wait=5.0)
        first = asyncio.create_task(one.once("replies-together", REQUEST, answer))
        await running.wait()
        second = asyncio.create_task(two.once("replies-together", REQUEST, answer))
        await asyncio.sleep(0.1)  # the second is waiting, not running
        release.set()
        answers = await asyncio.gather(first, second)
    assert ran == [1]
    assert [a.body for a in answers] == [b'{"made": 1}'] * 2
    assert [a.outcome for a in answers] == ["ok", "replayed"]


async def test_a_copy_waiting_past_its_wait_is_told_to_ask_again(connect):
    release = asyncio.Event()

    async def slow() -> Answer:
        await release.wait()
        return Answer(b"{}")

    async def never() -> Answer:
        raise AssertionError("a claimed request ran twice")

    async with connect("echo") as nc:
        one, two = await _replicas(nc, wait=0.2)
        first = asyncio.create_task(one.once("replies-busy", REQUEST, slow))
        await asyncio.sleep(0.05)
        told = await two.once("replies-busy", REQUEST, never)
        release.set()
        await first
        again = await two.once("replies-busy", REQUEST, never)
    assert (told.status, told.outcome) == (503, "request-in-flight")
    assert (again.status, again.outcome) == (0, "replayed")


async def test_a_claim_whose_replica_died_is_taken_over_once_it_lapses(connect):
    """A replica killed while it ran a request leaves its claim: the next copy, once the
    claim's lease has passed, runs the request."""
    async with connect("echo") as nc:
        kv = await nc.jetstream().key_value(REPLIES_BUCKET)
        dead = Kept(REQUEST, until=time.time() + 0.3)
        await kv.put("echo.replies-orphan", msgspec.msgpack.encode(dead))
        (alive, _) = await _replicas(nc, wait=5.0)

        async def answer() -> Answer:
            return Answer(b'{"made": 2}')

        started = time.monotonic()
        made = await alive.once("replies-orphan", REQUEST, answer)
        waited = time.monotonic() - started
    assert (made.body, made.outcome) == (b'{"made": 2}', "ok")
    assert waited >= 0.2  # it waited for the lease rather than running beside the claim


async def test_a_transient_failure_lets_its_claim_go_so_a_waiting_copy_runs(connect):
    runs: list[str] = []
    running, release = asyncio.Event(), asyncio.Event()

    async def fails() -> Answer:
        runs.append("first")
        running.set()
        await release.wait()
        return Answer(b"{}", 503, "service-unavailable")

    async def works() -> Answer:
        runs.append("second")
        return Answer(b'{"made": 3}')

    async with connect("echo") as nc:
        one, two = await _replicas(nc, wait=5.0)
        first = asyncio.create_task(one.once("replies-flaky", REQUEST, fails))
        await running.wait()
        second = asyncio.create_task(two.once("replies-flaky", REQUEST, works))
        await asyncio.sleep(0.05)
        release.set()
        failed, made = await asyncio.gather(first, second)
    assert runs == ["first", "second"]
    assert failed.status == 503
    assert made.body == b'{"made": 3}'


async def test_a_key_used_again_for_another_request_while_it_runs_is_refused(connect):
    release = asyncio.Event()

    async def slow() -> Answer:
        await release.wait()
        return Answer(b"{}")

    async with connect("echo") as nc:
        one, two = await _replicas(nc, wait=5.0)
        first = asyncio.create_task(one.once("replies-reused", REQUEST, slow))
        await asyncio.sleep(0.05)
        other = await two.once("replies-reused", b"digest-2", slow)
        release.set()
        await first
    assert (other.status, other.outcome) == (422, "idempotency-key-reused")


async def test_a_claim_is_renewed_while_its_request_runs_past_its_lease(connect):
    """A request that runs longer than a lease is not taken over while its replica lives:
    its claim is renewed, and a copy that comes after the first lease waits for its answer."""
    ran, running, release = [], asyncio.Event(), asyncio.Event()

    async def long() -> Answer:
        ran.append(1)
        running.set()
        await release.wait()
        return Answer(b'{"made": 4}')

    async with connect("echo") as nc:
        await Replies.open(nc.jetstream(), "echo", replicas=1)
        kv = await nc.jetstream().key_value(REPLIES_BUCKET)
        one, two = (Replies(kv, "echo", lease=0.3, wait=5.0) for _ in range(2))
        first = asyncio.create_task(one.once("replies-long", REQUEST, long))
        await running.wait()
        await asyncio.sleep(0.6)  # two leases: the first claim, unrenewed, has lapsed
        second = asyncio.create_task(two.once("replies-long", REQUEST, long))
        await asyncio.sleep(0.3)
        release.set()
        answers = await asyncio.gather(first, second)
    assert ran == [1]
    assert [a.outcome for a in answers] == ["ok", "replayed"]
