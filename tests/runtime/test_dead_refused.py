"""A dead letter whose owner refuses it (a 4xx: the room it would tell of is gone, say) is
parked once and left. Before, the refusal failed the parking: the letter came back every
30 s for good, recorded on the system's chain at each try."""

import asyncio
import uuid

from nats.js.errors import NotFoundError

from libs.audit.reading import records
from libs.audit.trail import Trail
from libs.contracts.problem import Refused, Unavailable
from libs.runtime.consumer import Consumer, Retry
from libs.runtime.dead import parked
from libs.runtime.service import ensure_shared_streams
from tests.personal.conftest import eventually


async def test_a_dead_letter_its_owner_refuses_is_parked_once(operator, audit_service, caplog):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject, reader = f"DR_{name}", f"dr.{name}.said", f"probe{name}.d"
    await ensure_shared_streams(js, ("DEAD",))
    await js.add_stream(name=stream, subjects=[subject])
    told: list[bytes] = []

    async def handle(_: bytes) -> None:
        raise RuntimeError("the model's provider answered 503")

    async def dead(data: bytes, _: str) -> None:
        told.append(data)
        raise Refused("room-not-found", 404, "the person has left the room")

    consumer = Consumer(
        js, stream=stream, durable="d", service=f"probe{name}", subjects=[subject],
        read=lambda m: m.data, handle=handle, dead=dead,
        retry=Retry(first_s=0.05, most_s=0.2, attempts=2),
        trail=Trail(operator, service=f"probe{name}"),
    )  # fmt: skip
    reading = asyncio.create_task(consumer.run(wait=0.1))
    try:
        await js.publish(subject, b"are you free on Thursday?")
        await eventually(lambda: parked(operator, reader))

        async def let_go() -> bool:
            """Terminated: the consumer's floor passed it, nothing waits to come back. A
            parking the refusal failed is handed back instead, and never gets here."""
            info = await js.consumer_info(stream, "d")
            return info.ack_floor.stream_seq == 1 and info.num_ack_pending == 0

        assert await eventually(let_go)
        assert told == [b"are you free on Thursday?"]
        chain = [r for r in await records(js, "tether") if r.data.get("durable") == "d"
                 and r.target == f"{stream}:1"]  # fmt: skip
        assert len(chain) == 1
        [refused] = [r for r in caplog.records if r.getMessage().startswith("a dead letter's")]
        assert "room-not-found" in refused.error
    finally:
        consumer.stop()
        await reading
        await js.delete_stream(stream)


async def test_a_dead_letter_its_owner_cannot_take_yet_comes_back_and_logs_no_error(
    operator, audit_service, caplog
):
    """Its owner's hook away (the rooms it tells through, say): parked again later, with a
    warning naming why, once in DEAD and on the system's chain. Before, each try logged an
    error with a traceback, as if a bug, and was recorded again."""
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"DU_{name}", f"du.{name}.said"
    await ensure_shared_streams(js, ("DEAD",))
    await js.add_stream(name=stream, subjects=[subject])
    tries: list[bytes] = []

    async def handle(_: bytes) -> None:
        raise RuntimeError("the model's provider answered 503")

    async def dead(data: bytes, _: str) -> None:
        tries.append(data)
        if len(tries) < 3:
            raise Unavailable(Refused("service-unavailable", 503, "no replica serves it").problem)

    consumer = Consumer(
        js, stream=stream, durable="d", service=f"probe{name}", subjects=[subject],
        read=lambda m: m.data, handle=handle, dead=dead,
        retry=Retry(first_s=0.05, most_s=0.2, attempts=2),
        trail=Trail(operator, service=f"probe{name}"),
    )  # fmt: skip
    reading = asyncio.create_task(consumer.run(wait=0.1))
    try:
        await js.publish(subject, b"are you free on Thursday?")

        async def let_go() -> bool:
            try:
                info = await js.consumer_info(stream, "d")
            except NotFoundError:  # not made yet
                return False
            return info.ack_floor.stream_seq == 1 and info.num_ack_pending == 0

        assert await eventually(let_go)
        assert len(tries) == 3
        waits = [r for r in caplog.records if r.getMessage().startswith("a dead letter could")]
        assert len(waits) == 2 and all(r.levelname == "WARNING" for r in waits)
        assert "no replica serves it" in waits[0].error
        assert not [r for r in caplog.records if r.getMessage() == "could not park a dead letter"]
        # Parked three times, in DEAD once and recorded once: before, a record each time.
        assert len(await parked(operator, f"probe{name}.d")) == 1
        chain = [r for r in await records(js, "tether") if r.data.get("durable") == "d"
                 and r.target == f"{stream}:1"]  # fmt: skip
        assert len(chain) == 1
    finally:
        consumer.stop()
        await reading
        await js.delete_stream(stream)
