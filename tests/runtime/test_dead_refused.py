"""What happens when a dead letter's owner, or the audit trail, does not take it.

- It refuses it (a 4xx: the room it would tell of is gone, say): the letter is parked once
  and left. Before, the refusal failed the parking: the letter came back every 30 s for
  good, recorded on the system's chain at each try.
- It cannot take it yet (the rooms it tells through are away): the letter is parked again
  later, with a warning naming why, once in DEAD and once on the system's chain. Before,
  each try logged an error with a traceback, as if a bug, and was recorded again.
- The trail cannot record its parking yet (the audit away just after DEAD took it): it is
  recorded when the letter comes back to be parked. Before, DEAD answered that one a
  duplicate, and a duplicate was taken as recorded: the parking was never recorded."""

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

from nats.js.errors import NotFoundError

from libs.audit.reading import records
from libs.audit.trail import AuditUnavailable, Trail
from libs.contracts.problem import Refused, Unavailable
from libs.runtime.consumer import Consumer, Retry
from libs.runtime.dead import parked
from libs.runtime.service import ensure_shared_streams
from tests.personal.conftest import eventually

LETTER = b"are you free on Thursday?"


class Reading:
    """A reader of a stream of its own whose handler always fails, parking each letter
    after two tries, with `dead` as its owner's hook and `trail` recording."""

    def __init__(self, operator, trail: type[Trail]) -> None:
        self.js, name = operator.jetstream(), uuid.uuid4().hex[:8]
        self.stream, self.subject, self.reader = f"DR_{name}", f"dr.{name}.said", f"probe{name}.d"
        self.trail = trail(operator, service=f"probe{name}")

    async def let_go(self) -> bool:
        """Terminated: the consumer's floor passed the letter, and nothing waits to come
        back. A letter handed back instead never gets here."""
        try:
            info = await self.js.consumer_info(self.stream, "d")
        except NotFoundError:  # not made yet
            return False
        return info.ack_floor.stream_seq == 1 and info.num_ack_pending == 0

    async def recorded(self) -> int:
        """How often the letter is on the system's chain."""
        chain = await records(self.js, "tether")
        return len([r for r in chain if r.target == f"{self.stream}:1"])


@contextlib.asynccontextmanager
async def reading(
    operator, dead: Callable[[bytes, str], Awaitable[None]] | None, trail: type[Trail] = Trail
) -> AsyncIterator[Reading]:
    r = Reading(operator, trail)

    tries = 0

    async def handle(_: bytes) -> None:  # each try's error its own, as a timeout's may be
        nonlocal tries
        tries += 1
        raise RuntimeError(f"the model's provider answered 503 (try {tries})")

    await ensure_shared_streams(r.js, ("DEAD",))
    await r.js.add_stream(name=r.stream, subjects=[r.subject])
    consumer = Consumer(
        r.js, stream=r.stream, durable="d", service=r.reader.split(".")[0],
        subjects=[r.subject], read=lambda m: m.data, handle=handle, dead=dead,
        retry=Retry(first_s=0.05, most_s=0.2, attempts=2), trail=r.trail,
    )  # fmt: skip
    task = asyncio.create_task(consumer.run(wait=0.1))
    try:
        await r.js.publish(r.subject, LETTER)
        yield r
    finally:
        consumer.stop()
        await task
        await r.js.delete_stream(r.stream)


async def test_a_dead_letter_its_owner_refuses_is_parked_once(operator, audit_service, caplog):
    told: list[bytes] = []

    async def dead(data: bytes, _: str) -> None:
        told.append(data)
        raise Refused("room-not-found", 404, "the person has left the room")

    async with reading(operator, dead) as r:
        await eventually(lambda: parked(operator, r.reader))
        assert await eventually(r.let_go)
        assert told == [LETTER]
        assert await r.recorded() == 1
        [refused] = [m for m in caplog.records if m.getMessage().startswith("a dead letter's")]
        assert "room-not-found" in refused.error


async def test_a_dead_letter_its_owner_cannot_take_yet_comes_back_and_logs_no_error(
    operator, audit_service, caplog
):
    tries: list[bytes] = []

    async def dead(data: bytes, _: str) -> None:
        tries.append(data)
        if len(tries) < 3:
            raise Unavailable(Refused("service-unavailable", 503, "no replica serves it").problem)

    async with reading(operator, dead) as r:
        assert await eventually(r.let_go)
        assert len(tries) == 3
        waits = [m for m in caplog.records if m.getMessage().startswith("a dead letter could")]
        assert len(waits) == 2 and all(m.levelname == "WARNING" for m in waits)
        assert "no replica serves it" in waits[0].error
        assert not [m for m in caplog.records if m.getMessage() == "could not park a dead letter"]
        # Parked three times, in DEAD once and recorded once: before, a record each time.
        assert len(await parked(operator, r.reader)) == 1
        assert await r.recorded() == 1


class AwayOnce(Trail):
    """The trail, its first record asked for while the audit is away."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.refused = 0

    async def append(self, *args, **kwargs):
        if not self.refused:
            self.refused += 1
            raise AuditUnavailable(Refused("audit-unavailable", 503, "no audit replica").problem)
        return await super().append(*args, **kwargs)


async def test_a_parking_the_trail_could_not_record_is_recorded_when_it_comes_back(
    operator, audit_service
):
    async with reading(operator, None, AwayOnce) as r:
        assert await eventually(r.let_go)
        assert r.trail.refused == 1
        assert len(await parked(operator, r.reader)) == 1
        assert await r.recorded() == 1
