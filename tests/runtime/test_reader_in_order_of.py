"""A reader handles what it fetched at once, so two messages about one thing fetched
together could be handled in either order: the agents' reader, behind, fetched a person's
account announced and a message for them together, read the message first, found no agent,
and no one answered it. With `in_order_of`, the messages about one thing are handled in
the order they came, each once the one before it is done; the rest at once."""

import asyncio
import uuid

from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually


async def test_messages_about_one_thing_are_handled_in_order_and_the_rest_at_once(operator):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"ORDER_{name}", f"order.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    # Published before the reader starts: fetched together, as by a reader behind.
    for data in (b"ada:made", b"bob:said", b"ada:said", b"ada:again"):
        await js.publish(subject, data)
    started: list[bytes] = []
    ended: list[bytes] = []

    async def handle(data: bytes) -> None:
        started.append(data)
        await asyncio.sleep(0.5 if data == b"ada:made" else 0.05)
        ended.append(data)

    reader = Consumer(
        js,
        stream=stream,
        durable="d",
        subjects=[subject],
        read=lambda m: m.data,
        handle=handle,
        in_order_of=lambda data: data.split(b":")[0].decode(),
    )
    reading = asyncio.create_task(reader.run(wait=0.1))
    try:
        await eventually(lambda: asyncio.sleep(0, len(ended) == 4), timeout=20)
    finally:
        reader.stop()
        await reading
        await js.delete_stream(stream)
    # Bob's was not held behind Ada's slow first one; Ada's came each after the one before.
    assert started[:2] == [b"ada:made", b"bob:said"]
    assert [d for d in ended if d.startswith(b"ada")] == [b"ada:made", b"ada:said", b"ada:again"]
    assert ended.index(b"bob:said") < ended.index(b"ada:made")
    assert started.index(b"ada:said") > ended.index(b"ada:made")
