"""A reader a release adds reads from its making with `new_only`: made with the stream's
past in it, the rooms' reader of removed agents would act on every removal of the week
EVENTS keeps, taking agents made again since out of the rooms they are in now."""

import asyncio
import uuid

from nats.js.errors import NotFoundError

from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually


async def test_a_new_only_reader_reads_what_comes_after_it_is_made_and_again_when_restarted(
    operator,
):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"NEW_{name}", f"new.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    await js.publish(subject, b"before")
    handled: list[bytes] = []

    async def handle(data: bytes) -> None:
        handled.append(data)

    def reader() -> Consumer:
        return Consumer(
            js, stream=stream, durable="d", subjects=[subject], read=lambda m: m.data,
            handle=handle, new_only=True,
        )  # fmt: skip

    async def made():
        try:
            return await js.consumer_info(stream, "d")
        except NotFoundError:
            return None

    try:
        for said in (b"after", b"again"):  # the second by a reader started again
            running = reader()
            reading = asyncio.create_task(running.run(wait=0.1))
            await eventually(made)
            await js.publish(subject, said)
            await eventually(lambda said=said: asyncio.sleep(0, handled[-1:] == [said]))
            running.stop()
            await reading
        assert handled == [b"after", b"again"]
    finally:
        await js.delete_stream(stream)
