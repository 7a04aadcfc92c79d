"""A reader whose release reads more (another subject, a longer ack wait) than its durable
was made with: the durable is made what the release asks for. Before, a durable found was
used as it was, so a service upgraded over a kept store (`make run` again on its home, a
rolling deploy) never read what the new release subscribes to."""

import asyncio
import uuid

from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually


async def test_a_durable_made_by_the_release_before_reads_what_this_release_reads(operator):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, old, new = f"UP_{name}", f"up.{name}.old", f"up.{name}.new"
    await js.add_stream(name=stream, subjects=[f"up.{name}.>"])
    handled: list[bytes] = []

    async def handle(data: bytes) -> None:
        handled.append(data)

    async def release(subjects: list[str], ack_wait: float) -> None:
        reader = Consumer(
            js, stream=stream, durable="d", subjects=subjects, read=lambda m: m.data,
            handle=handle, ack_wait=ack_wait,
        )  # fmt: skip
        reading = asyncio.create_task(reader.run(wait=0.1))
        try:
            said = len(handled)
            await js.publish(subjects[-1], subjects[-1].encode())

            async def read() -> bool:
                return handled[said:] == [subjects[-1].encode()]

            await eventually(read)
        finally:
            reader.stop()
            await reading

    try:
        await release([old], ack_wait=30)
        await release([old, new], ack_wait=45)
        info = await js.consumer_info(stream, "d")
        assert (info.config.filter_subjects, info.config.ack_wait) == ([old, new], 45)
        await release([new], ack_wait=45)  # and back to one subject
        info = await js.consumer_info(stream, "d")
        assert (info.config.filter_subject, info.config.filter_subjects) == (new, None)
        assert handled == [old.encode(), new.encode(), new.encode()]
    finally:
        await js.delete_stream(stream)
