"""A reader's handler that fails for a moment is tried again, and says why in one line."""

import asyncio
import uuid

from libs.runtime.bus import NotSent
from libs.runtime.consumer import Consumer, Retry
from tests.personal.conftest import eventually


async def test_a_handler_off_the_bus_is_tried_again_and_logged_without_a_trace(operator, caplog):
    """NotSent says the connection is away for a moment, as Unavailable says a peer is: the
    message comes back, and the log names why in one line rather than a traceback."""
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"OFF_{name}", f"off.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    tries: list[bytes] = []

    async def handle(data: bytes) -> None:
        tries.append(data)
        if len(tries) == 1:
            raise NotSent("not connected to NATS; a write not sent")

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
        assert failed.exc_info is None and "not connected" in failed.error
    finally:
        reader.stop()
        await reading
        await js.delete_stream(stream)
