"""The scheduler's own state: timers in KV `scheduler-timers`, schedules on the SCHEDULER
stream (JetStream message scheduling), deliveries on TIMERS.

A schedule's subject names its timer's owner, key and id: `scheduler.at.<owner>.<key>.<id>`,
firing into `scheduler.due.<owner>.<key>.<id>`. The KV record is the truth; a due message
whose id is not the record's is a replaced schedule and does nothing.
"""

from collections.abc import Callable
from datetime import datetime, timedelta

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StreamConfig
from nats.js.errors import (
    APIError,
    BadRequestError,
    NotFoundError,
)
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.scheduler import ENGINE, Fired, Timer
from libs.contracts.streams import timer_subject
from libs.runtime import logs
from libs.runtime.kv import Read, led, open_bucket, swap, write_at
from libs.runtime.leader import exact_reads
from libs.runtime.service import ensure_shared_streams

__all__ = ["Due", "Engine", "Timers", "due", "open_store"]

_BUCKET = "scheduler-timers"
_DUE_AT = "Tether-Due-At"
_timer = codec.decoder(Timer)
# A fired or canceled timer is kept this long to be read back, then the server removes it.
_KEEP_DONE = timedelta(days=7)


async def open_store(js: JetStreamContext, *, replicas: int = 1) -> tuple["Timers", "Engine"]:
    kv = await open_bucket(js, KeyValueConfig(bucket=_BUCKET, history=1, replicas=replicas))
    engine = StreamConfig(
        name=ENGINE.name,
        subjects=list(ENGINE.subjects),
        description=ENGINE.description,
        allow_msg_schedules=True,
        allow_direct=True,
        num_replicas=replicas,
    )
    try:
        await js.add_stream(engine)
    except BadRequestError:
        await js.update_stream(engine)
    await led(js, ENGINE.name)
    await ensure_shared_streams(js, ("TIMERS",), replicas=replicas)
    return Timers(kv, await exact_reads(kv)), Engine(js)


class Timers:
    def __init__(self, kv: KeyValue, exact: Read) -> None:
        self._kv, self._exact = kv, exact

    async def get(self, owner: str, key: str) -> Timer | None:
        """The timer with every acknowledged change in it (through the stream's leader on a
        replicated bucket): a timer just scheduled is there to cancel from any node."""
        found = await self._exact(self._kv, f"{owner}.{key}")
        return _timer.decode(found[0].value) if found and found[0].value else None

    async def change(
        self, owner: str, key: str, change: Callable[[Timer | None], Timer | None]
    ) -> tuple[Timer | None, Timer | None]:
        """The timer before and after `change`, by compare-and-set."""
        return await swap(
            self._kv,
            f"{owner}.{key}",
            change,
            decode=lambda raw: _timer.decode(raw) if raw else None,
            default=None,
            write=self._put,
            read=self._exact,
        )

    async def _put(self, timer: Timer | None, revision: int) -> int:
        """Compare-and-set on `revision` (0: the key must be new); terminal states expire."""
        assert timer is not None, "a timer is never removed, only settled"
        keep = None if timer.state == "pending" else _KEEP_DONE
        key = f"{timer.owner}.{timer.key}"
        return await write_at(self._kv, key, codec.encode(timer), revision, keep=keep)

    async def of_owner(self, owner: str, prefix: str) -> list[Timer]:
        timers = [_timer.decode(e.value) for e in await self._exact(self._kv, f"{owner}.>")]
        return [t for t in timers if t.key.startswith(prefix)]


class Engine:
    """JetStream's message scheduling: the one place anything in tether waits."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def arm(self, timer: Timer, at: datetime) -> None:
        name = f"{timer.owner}.{timer.key}.{timer.id}"
        await self._js.publish(
            f"scheduler.at.{name}",
            b"",
            headers={
                "Nats-Schedule": f"@at {at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}",
                "Nats-Schedule-Target": f"scheduler.due.{name}",
                _DUE_AT: timer.due_at.isoformat(),
                **logs.carried(),  # its fire is handled under the request that timed it
            },
        )

    async def disarm(self, timer: Timer) -> None:
        """Best effort: a schedule that fires anyway finds its timer not pending."""
        try:
            await self._js.purge_stream(
                ENGINE.name, subject=f"scheduler.at.{timer.owner}.{timer.key}.{timer.id}"
            )
        except (APIError, NotFoundError):
            pass

    async def deliver(self, fired: Fired, timer_id: str) -> None:
        """Once: a repeat within TIMERS' duplicate window is dropped by its Nats-Msg-Id."""
        await self._js.publish(
            timer_subject(fired.owner, fired.target),
            codec.encode(fired),
            headers={"Nats-Msg-Id": f"{fired.owner}.{fired.key}.{timer_id}", **logs.carried()},
        )

    async def forget_handled(self, consumer: str) -> None:
        """Purge the due messages `consumer` has acknowledged, in one range.

        Deleting each one as it is handled slowed the server down as the deletes piled up
        (p99 fire lateness from 3 to 27 ms over four runs of 1,000; BENCHMARKS.md)."""
        info = await self._js.consumer_info(ENGINE.name, consumer)
        floor = info.ack_floor.stream_seq if info.ack_floor else 0
        if floor:
            await self._js.purge_stream(ENGINE.name, subject="scheduler.due.>", seq=floor + 1)


class Due(msgspec.Struct, frozen=True):
    """A due message: its timer, and the time it is due."""

    owner: str
    key: str
    timer_id: str
    due_at: datetime


def due(msg: Msg) -> Due:
    """The due message as its subject and header say."""
    tokens = msg.subject.split(".")
    due_at = (msg.headers or {}).get(_DUE_AT)
    if len(tokens) < 5 or due_at is None:
        raise msgspec.ValidationError(f"{msg.subject} is not a due message")
    return Due(tokens[2], ".".join(tokens[3:-1]), tokens[-1], datetime.fromisoformat(due_at))
