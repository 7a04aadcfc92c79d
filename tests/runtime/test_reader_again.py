"""A reader's handler that fails for a moment is tried again, and says why in one line."""

import asyncio
import uuid

import nats.errors
import pytest
from nats.js.errors import ServiceUnavailableError

from libs.runtime.bus import NotSent, connecting, let_go
from libs.runtime.consumer import Consumer, Retry
from tests.personal.conftest import eventually
from tests.support import Bus


@pytest.mark.parametrize(
    ("away", "said"),
    [
        (NotSent("not connected to NATS; a write not sent"), "not connected"),
        (nats.errors.TimeoutError(), "nats: timeout"),
        (ServiceUnavailableError(), "ServiceUnavailableError"),
    ],
    ids=["not-sent", "timed-out", "no-leader"],
)
async def test_a_handler_off_the_bus_is_tried_again_and_logged_without_a_trace(
    operator, caplog, away, said
):
    """A connection away, a server that did not answer in time, a stream with no leader
    for a moment, as Unavailable says a peer is away: the message comes back, and the log
    names why in one line rather than a traceback."""
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"OFF_{name}", f"off.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    tries: list[bytes] = []

    async def handle(data: bytes) -> None:
        tries.append(data)
        if len(tries) == 1:
            raise away

    reader = Consumer(
        js, stream=stream, durable="d", subjects=[subject], read=lambda m: m.data,
        handle=handle, retry=Retry(first_s=0.05),
    )  # fmt: skip
    reading = asyncio.create_task(reader.run(wait=0.1))
    try:
        await js.publish(subject, b"one")

        async def handled_again() -> bool:
            return tries == [b"one", b"one"]

        assert await eventually(handled_again), tries
        [failed] = [r for r in caplog.records if r.getMessage().startswith("handling failed")]
        assert failed.exc_info is None and said in failed.error
    finally:
        reader.stop()
        await reading
        await js.delete_stream(stream)


async def test_a_pull_no_one_answers_is_asked_again_and_logged_without_a_trace(operator, caplog):
    """A pull that finds no consumer to answer it (503: its leader being elected on a
    cluster as it starts, or here, the consumer gone) is asked again half a second later,
    and logged in one line: a cluster's start logged a traceback per reader."""
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"PULL_{name}", f"pull.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    reader = Consumer(
        js, stream=stream, durable="d", subjects=[subject], read=lambda m: m.data,
        handle=lambda _: asyncio.sleep(0),
    )  # fmt: skip
    reading = asyncio.create_task(reader.run(wait=0.1))
    try:
        await eventually(lambda: _made(js, stream))
        await js.delete_consumer(stream, "d")

        async def failed_twice() -> bool:
            return len(_fetches_failed(caplog)) >= 2

        assert await eventually(failed_twice)
        for failed in _fetches_failed(caplog):
            assert failed.exc_info is None and "ServiceUnavailableError" in failed.error
    finally:
        reader.stop()
        await reading
        await js.delete_stream(stream)


async def test_a_reader_started_while_the_bus_is_away_subscribes_once_it_is_back(tmp_path, caplog):
    """A reader whose durable cannot be made or found yet (its server away; on a cluster
    starting, the consumer's leader not elected) asks again, saying why in one line, and
    reads once it is there: a cluster's start stopped a service on it, to be started again."""
    bus = Bus(tmp_path)
    nc, connected = await connecting(bus.url, user="", password="", name="reader-again")
    await connected
    js, handled = nc.jetstream(), []
    await js.add_stream(name="AWAY", subjects=["away.said"])
    reader = Consumer(
        js, stream="AWAY", durable="d", subjects=["away.said"], read=lambda m: m.data,
        handle=lambda data: asyncio.sleep(0, handled.append(data)),
    )  # fmt: skip
    reading = None
    try:
        await bus.stop()
        await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
        reading = asyncio.create_task(reader.run(wait=0.1))
        await eventually(lambda: asyncio.sleep(0, _said(caplog, "subscribe failed")))
        await bus.start()
        await eventually(lambda: asyncio.sleep(0, nc.is_connected))
        await js.publish("away.said", b"one")
        await eventually(lambda: asyncio.sleep(0, handled == [b"one"]))
        for failed in _said(caplog, "subscribe failed"):
            assert failed.exc_info is None and "NotSent" in failed.error
    finally:
        reader.stop()
        if reading is not None:
            await reading
        await let_go(nc)
        await bus.stop()


def _said(caplog, message: str) -> list:
    return [r for r in caplog.records if r.getMessage() == message]


async def _made(js, stream: str) -> bool:
    return bool(await js.consumers_info(stream))


def _fetches_failed(caplog) -> list:
    return [r for r in caplog.records if r.getMessage() == "fetch failed"]
