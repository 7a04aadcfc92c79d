"""The fire path: due messages from the engine, held to the exact due time, decided by one
compare-and-set (pending -> fired), delivered once, then removed.

Replicas share one durable pull consumer, so each due message goes to one of them; one that
dies mid-fire has its message re-delivered to another after the ack wait. Every step is
safe to repeat: the compare-and-set lets one fire through, the delivery's Nats-Msg-Id
drops a repeat.
"""

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from libs.contracts.scheduler import ENGINE
from services.scheduler import domain
from services.scheduler.resolution import Lateness
from services.scheduler.store import Conflict, Engine, Timers, due_parts

__all__ = ["Firing"]

_log = logging.getLogger(__name__)
_DURABLE = "scheduler"
_BATCH = 256
_PURGE_EVERY_S = 5.0


class Firing:
    def __init__(
        self,
        js: JetStreamContext,
        timers: Timers,
        engine: Engine,
        lateness: Lateness,
        *,
        clock: Callable[[], datetime],
        max_in_flight: int = 4096,
    ) -> None:
        self._js, self._timers, self._engine, self._lateness = js, timers, engine, lateness
        self._clock = clock
        self._slots = asyncio.Semaphore(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()

    async def run(self) -> None:
        """Fetch and fire until `stop()`, then finish what is in hand."""
        sub = await self._js.pull_subscribe(
            "scheduler.due.>",
            durable=_DURABLE,
            stream=ENGINE.name,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT, ack_wait=10, max_ack_pending=20000
            ),
        )
        loop = asyncio.get_running_loop()
        next_purge = loop.time() + _PURGE_EVERY_S
        while not self._stop.is_set():
            if loop.time() >= next_purge:
                next_purge = loop.time() + _PURGE_EVERY_S
                try:
                    await self._engine.forget_handled(_DURABLE)
                except Exception:  # housekeeping; the next round will do it
                    _log.warning("purge of handled due messages failed", exc_info=True)
            try:
                msgs = await sub.fetch(_BATCH, timeout=0.5)
            except TimeoutError:  # nothing due (nats-py's timeouts are TimeoutErrors too)
                continue
            except Exception:  # the bus is reconnecting: try again shortly
                _log.warning("fetch failed", exc_info=True)
                await asyncio.sleep(0.5)
                continue
            for msg in msgs:
                await self._slots.acquire()
                task = asyncio.create_task(self._fire(msg))
                self._tasks.add(task)
                task.add_done_callback(self._done)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await sub.unsubscribe()

    def stop(self) -> None:
        self._stop.set()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def _fire(self, msg: Msg) -> None:
        try:
            owner, key, timer_id, due_at = due_parts(msg.subject, msg.headers)
            hold = (due_at - self._clock()).total_seconds()
            if hold > 0:  # armed early by at most ARM_EARLY: hold the rest, still un-acked
                await asyncio.sleep(hold)
            await self._settle(owner, key, timer_id)
            await msg.ack()
        except Exception:
            _log.exception("fire failed; it will be re-delivered", extra={"subject": msg.subject})
            await msg.nak(delay=1)

    async def _settle(self, owner: str, key: str, timer_id: str) -> None:
        while True:
            found = await self._timers.get(owner, key)
            if found is None:
                return
            timer, revision = found
            if timer.state == "fired" and timer.id == timer_id:
                break  # fired before a crash; deliver again, the Msg-Id drops a repeat
            fired = domain.fire(timer, timer_id, now=self._clock())
            if fired is None:
                return  # canceled, replaced, or fired: the loser of the race does nothing
            try:
                await self._timers.put(fired, revision)
            except Conflict:
                continue
            timer = fired
            self._lateness.record(fired.late_ms or 0.0)
            break
        await self._engine.deliver(domain.delivery(timer), timer_id)
