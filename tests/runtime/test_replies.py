"""A keyed request's claim across replicas: two `Replies` over one bucket are two replicas,
with nothing shared but the bucket."""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import msgspec

from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime.bus import connecting
from libs.runtime.replies import Answer, Kept, Replies
from tests.personal.conftest import eventually
from tests.support import Link, across_a_link

REQUEST = b"digest-1"


class Held:
    """A handler that runs until released: how often it ran, and whether it is running."""

    def __init__(self, answer: Answer) -> None:
        self.answer, self.runs = answer, 0
        self.running, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self) -> Answer:
        self.runs += 1
        self.running.set()
        await self.release.wait()
        return self.answer


async def never() -> Answer:
    raise AssertionError("a claimed request ran twice")


async def _replicas(nc, *, wait: float = 5.0, **lease: float) -> tuple[Replies, Replies]:
    await Replies.open(nc.jetstream(), "echo", replicas=1)  # the bucket, as a service makes it
    kv = await nc.jetstream().key_value(REPLIES_BUCKET)
    return Replies(kv, "echo", wait=wait, **lease), Replies(kv, "echo", wait=wait, **lease)


async def _at_once(one: Replies, two: Replies, key: str, first: Held, copy) -> list[Answer]:
    """`first` run at one replica, and a copy of its request asked at the other while it
    runs (answered by `copy` if it runs): both answers."""
    running = asyncio.create_task(one.once(key, REQUEST, first))
    await first.running.wait()
    asked = asyncio.create_task(two.once(key, REQUEST, copy))
    await asyncio.sleep(0.1)  # the copy asks while the first runs
    first.release.set()
    return await asyncio.gather(running, asked)


async def test_two_copies_at_two_replicas_at_once_run_once(connect):
    """The first copy's replica is still running it when the second's asks: the second
    waits and is answered with the first's answer, never running beside it."""
    held = Held(Answer(b'{"made": 1}'))
    async with connect("echo") as nc:
        answers = await _at_once(*await _replicas(nc), "replies-together", held, held)
    assert held.runs == 1
    assert [a.body for a in answers] == [b'{"made": 1}'] * 2
    assert [a.outcome for a in answers] == ["ok", "replayed"]


async def test_a_copy_waiting_past_its_wait_is_told_to_ask_again(connect):
    held = Held(Answer(b"{}"))
    async with connect("echo") as nc:
        one, two = await _replicas(nc, wait=0.2)
        first = asyncio.create_task(one.once("replies-busy", REQUEST, held))
        await held.running.wait()
        told = await two.once("replies-busy", REQUEST, never)
        held.release.set()
        await first
        again = await two.once("replies-busy", REQUEST, never)
    assert (told.status, told.outcome) == (503, "request-in-flight")
    assert (again.status, again.outcome) == (0, "replayed")


async def test_a_claim_whose_replica_died_is_taken_over_once_it_lapses(connect):
    """A replica killed while it ran a request leaves its claim: the next copy, once the
    claim's lease has passed, runs the request."""
    async with connect("echo") as nc:
        alive, _ = await _replicas(nc)
        kv = await nc.jetstream().key_value(REPLIES_BUCKET)
        dead = Kept(REQUEST, until=time.time() + 0.3)
        await kv.put("echo.replies-orphan", msgspec.msgpack.encode(dead))

        async def answer() -> Answer:
            return Answer(b'{"made": 2}')

        made = await alive.once("replies-orphan", REQUEST, answer)
        answered_at = time.time()
    assert (made.body, made.outcome) == (b'{"made": 2}', "ok")
    assert answered_at >= dead.until  # it waited for the lease rather than running beside it


async def test_a_transient_failure_lets_its_claim_go_so_a_waiting_copy_runs(connect):
    fails = Held(Answer(b"{}", 503, "service-unavailable"))
    works = Held(Answer(b'{"made": 3}'))
    works.release.set()
    async with connect("echo") as nc:
        failed, made = await _at_once(*await _replicas(nc), "replies-flaky", fails, works)
    assert (fails.runs, works.runs) == (1, 1)
    assert failed.status == 503
    assert made.body == b'{"made": 3}'


async def test_a_key_used_again_for_another_request_while_it_runs_is_refused(connect):
    held = Held(Answer(b"{}"))
    async with connect("echo") as nc:
        one, two = await _replicas(nc)
        first = asyncio.create_task(one.once("replies-reused", REQUEST, held))
        await held.running.wait()
        other = await two.once("replies-reused", b"digest-2", never)
        held.release.set()
        await first
    assert (other.status, other.outcome) == (422, "idempotency-key-reused")


async def test_a_claim_is_renewed_while_its_request_runs_past_its_lease(connect):
    """A request that runs longer than a lease is not taken over while its replica lives:
    its claim is renewed, and a copy that comes after the first lease waits for its answer."""
    held = Held(Answer(b'{"made": 4}'))
    async with connect("echo") as nc:
        # A lease long enough that a busy machine still renews it (a third of it apart).
        one, two = await _replicas(nc, lease=1.2)
        first = asyncio.create_task(one.once("replies-long", REQUEST, held))
        await held.running.wait()
        await asyncio.sleep(2.4)  # two leases: the first claim, unrenewed, has lapsed
        second = asyncio.create_task(two.once("replies-long", REQUEST, held))
        await asyncio.sleep(0.3)
        held.release.set()
        answers = await asyncio.gather(first, second)
    assert held.runs == 1
    assert [a.outcome for a in answers] == ["ok", "replayed"]


async def test_the_bus_away_while_a_keyed_request_runs_is_said_in_one_line(stack, caplog):
    """A renewal, or the answer's keeping, that finds the bus away is tried at the next or
    let go, as a reader's transient failure is: a line saying so, with no traceback."""
    link = Link(stack.nats_url)
    async with link as url:
        nc, connected = await connecting(
            url, user="echo", password=stack.passwords["echo"], name="replies-away"
        )
        await connected
        try:
            one, _ = await _replicas(nc, lease=0.6)
            held = Held(Answer(b'{"made": 5}'))
            running = asyncio.create_task(one.once("replies-away", REQUEST, held))
            await held.running.wait()
            link.cut()

            async def said() -> list[logging.LogRecord]:
                return [r for r in caplog.records if r.getMessage() == "claim not renewed"]

            (renewal, *_) = await eventually(said)
            held.release.set()
            assert (await running).body == b'{"made": 5}'
        finally:
            await nc.close()
    (kept,) = [r for r in caplog.records if r.getMessage() == "answer not kept"]
    assert (renewal.exc_info, kept.exc_info) == (None, None)
    assert "not connected to NATS" in renewal.error and "not connected to NATS" in kept.error


CLAIM_WRITE = f"HPUB $KV.{REPLIES_BUCKET}.".encode()  # a claim's write, not a read naming it


@contextlib.asynccontextmanager
async def _across_a_link(
    stack, connect, **lease: float
) -> AsyncIterator[tuple[Replies, Replies, Link]]:
    """Two replicas, the first's connection across a Link, its wait for an answer 1 s."""
    async with (
        across_a_link(stack.nats_url, "echo", stack.passwords["echo"]) as (near, link),
        connect("echo") as far,
    ):
        await Replies.open(far.jetstream(), "echo", replicas=1)
        one = await near.jetstream(timeout=1.0).key_value(REPLIES_BUCKET)
        two = await far.jetstream().key_value(REPLIES_BUCKET)
        yield Replies(one, "echo", **lease), Replies(two, "echo", **lease), link


async def test_a_claim_whose_answer_was_lost_is_the_claim_that_landed(stack, connect):
    """Before, the request failed (a 503) with its claim standing, and its retry waited a
    lease for a claim no replica held."""
    held = Held(Answer(b'{"made": 6}'))
    held.release.set()
    async with _across_a_link(stack, connect) as (one, two, link):
        link.deafen_at(CLAIM_WRITE, 1.5)
        first = await one.once("replies-unheard-claim", REQUEST, held)
        again = await two.once("replies-unheard-claim", REQUEST, never)
    assert held.runs == 1
    assert (first.outcome, again.outcome, again.body) == ("ok", "replayed", b'{"made": 6}')


async def test_a_renewal_whose_answer_was_lost_keeps_its_claim_and_its_answer(stack, connect):
    """Before, the renewal that landed unheard left the claim a revision on; the next
    renewal met it as taken over, the answer was not kept, and a retry ran the request
    again once the lease ran out."""
    held = Held(Answer(b'{"made": 7}'))
    async with _across_a_link(stack, connect, lease=3.0) as (one, two, link):
        key = "replies-unheard-renewal"
        running = asyncio.create_task(one.once(key, REQUEST, held))
        await held.running.wait()
        kv = two._kv
        claimed = (await kv.get(f"echo.{key}")).revision
        link.deafen_at(CLAIM_WRITE, 1.5)

        async def renewed_past_the_lost_one() -> bool:
            return (await kv.get(f"echo.{key}")).revision >= claimed + 2

        await eventually(renewed_past_the_lost_one, timeout=15)
        held.release.set()
        first = await running
        again = await two.once(key, REQUEST, never)
    assert held.runs == 1
    assert (first.outcome, again.outcome, again.body) == ("ok", "replayed", b'{"made": 7}')
