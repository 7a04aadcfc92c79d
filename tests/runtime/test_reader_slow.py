"""A handler slower than its reader's ack wait keeps its message: it says it is still at
work, so the server does not hand the message to another replica meanwhile. The agents'
reader waits up to 60 s on a model, and its ack wait is 30 s: a slow reply was drafted,
and metered, twice."""

import asyncio
import uuid

from nats.js.errors import NotFoundError

from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually


async def test_a_handler_slower_than_the_ack_wait_is_not_handed_its_message_again(operator):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"SLOW_{name}", f"slow.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    handled: list[bytes] = []

    async def handle(data: bytes) -> None:
        handled.append(data)
        await asyncio.sleep(3.5)

    replicas = [
        Consumer(
            js,
            stream=stream,
            durable="d",
            subjects=[subject],
            read=lambda m: m.data,
            handle=handle,
            ack_wait=1,
        )
        for _ in range(2)
    ]
    reading = [asyncio.create_task(r.run(wait=0.1)) for r in replicas]
    try:
        await js.publish(subject, b"one")

        async def acked():
            try:
                info = await js.consumer_info(stream, "d")
            except NotFoundError:  # not made yet
                return None
            return info if info.ack_floor.stream_seq == 1 and not info.num_ack_pending else None

        info = await eventually(acked, timeout=20)
        assert handled == [b"one"] and info.num_redelivered == 0, (handled, info)
    finally:
        for reader in replicas:
            reader.stop()
        await asyncio.gather(*reading)
        await js.delete_stream(stream)
