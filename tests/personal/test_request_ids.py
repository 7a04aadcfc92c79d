"""One request followed through the system by its id (README, "The HTTP API"): a post's
id goes with the event its message raises, and the readers of that event handle it under
the same id, so every log line it causes, in any service, names the post."""

import asyncio
import uuid

from libs.contracts.principal import REQUEST_ID_HEADER
from libs.contracts.streams import EVENTS
from libs.runtime import logs
from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually, raised, room_with


async def test_a_posts_id_goes_with_the_event_its_message_raises(api, people, operator):
    room = await room_with(api, people, people.bob_id)
    js = operator.jetstream()
    since = (await js.stream_info(EVENTS.name)).state.last_seq + 1
    posted = await api.post(
        f"/v1/rooms/{room['id']}/messages", json={"text": "Lunch?", "to": people.bob_id},
        headers={**people.ada, "X-Request-Id": "req-lunch"},
    )  # fmt: skip
    assert posted.status == 201, await posted.text()
    assert posted.headers["X-Request-Id"] == "req-lunch"
    seq = (await posted.json())["seq"]
    event = await raised(operator, since, room["id"], seq)
    assert (event.headers or {}).get(REQUEST_ID_HEADER) == "req-lunch"


async def test_a_reader_handles_each_message_under_the_id_it_was_published_with(operator):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject = f"TRACED_{name}", f"traced.{name}.said"
    await js.add_stream(name=stream, subjects=[subject])
    handled: list[tuple[bytes, str | None]] = []

    async def handle(data: bytes) -> None:
        handled.append((data, logs.REQUEST.get()))

    reader = Consumer(
        js, stream=stream, durable="d", subjects=[subject], read=lambda m: m.data,
        handle=handle,
    )  # fmt: skip
    reading = asyncio.create_task(reader.run(wait=0.1))
    try:
        await js.publish(subject, b"traced", headers={REQUEST_ID_HEADER: "req-event"})
        await js.publish(subject, b"plain")

        async def both() -> bool:
            return len(handled) == 2

        await eventually(both)
    finally:
        reader.stop()
        await reading
        await js.delete_stream(stream)
    assert sorted(handled) == [(b"plain", None), (b"traced", "req-event")]
