"""Each message a reader is done with is counted in `tether_reader_lag_seconds`, by its
age then: what an operator alerts on when a reader falls behind what is published."""

import asyncio
import time
import uuid

from prometheus_client import REGISTRY

from libs.runtime.consumer import Consumer
from tests.personal.conftest import eventually


def _lag(durable: str) -> tuple[float, float]:
    def sample(name: str) -> float:
        labels = {"durable": durable}
        return REGISTRY.get_sample_value(f"tether_reader_lag_seconds_{name}", labels) or 0.0

    return sample("count"), sample("sum")


async def test_a_reader_counts_each_message_by_its_age_when_done(operator):
    js, name = operator.jetstream(), uuid.uuid4().hex[:8]
    stream, subject, durable = f"LAG_{name}", f"lag.{name}.said", f"lag-{name}"
    await js.add_stream(name=stream, subjects=[subject])
    handled: list[float] = []

    async def handle(_: bytes) -> None:
        handled.append(time.time())

    published = time.time()
    for text in (b"one", b"two"):
        await js.publish(subject, text)
    reader = Consumer(
        js, stream=stream, durable=durable, subjects=[subject], read=lambda m: m.data,
        handle=handle,
    )  # fmt: skip
    reading = asyncio.create_task(reader.run(wait=0.1))
    try:

        async def both_counted() -> bool:
            return _lag(durable)[0] == 2

        assert await eventually(both_counted)
        _, total = _lag(durable)
        # Each at least as old as it was when handled, and no older than now.
        assert sum(at - published for at in handled) - 0.01 <= total
        assert total <= 2 * (time.time() - published) + 0.01
    finally:
        reader.stop()
        await reading
        await js.delete_stream(stream)
