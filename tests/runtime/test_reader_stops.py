"""A reader told to stop hands back what its last pull brings, unhandled: a service shutting
down starts no work its peers, draining too, could not answer (found when `tether up`'s
clean stop logged a reader's call to a drained service as failed). Another replica, or
this one started again, takes it at once."""

import asyncio
import uuid

from nats.js.errors import NotFoundError

from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually


async def test_what_the_last_pull_brings_after_a_stop_is_handed_back_unhandled(operator):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"STOPS_{name}", f"stops.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    handled: dict[str, list[bytes]] = {"stopped": [], "next": []}

    def reader(who: str) -> Consumer[bytes]:
        async def handle(data: bytes) -> None:
            handled[who].append(data)

        return Consumer(
            js, stream=stream, durable="d", subjects=[subject], read=lambda m: m.data,
            handle=handle,
        )  # fmt: skip

    try:
        stopped = reader("stopped")
        running = asyncio.create_task(stopped.run(wait=5.0))

        async def pulling() -> bool:
            try:
                return (await js.consumer_info(stream, "d")).num_waiting == 1
            except NotFoundError:  # not made yet
                return False

        assert await eventually(pulling), "the reader never pulled"
        stopped.stop()
        await js.publish(subject, b"one")  # brought by the pull in flight
        await running
        assert handled["stopped"] == []

        after = reader("next")
        reading = asyncio.create_task(after.run(wait=0.1))

        async def taken() -> bool:
            return handled["next"] == [b"one"]

        assert await eventually(taken), handled
        after.stop()
        await reading
    finally:
        await js.delete_stream(stream)
