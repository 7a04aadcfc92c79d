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

from nats.js import JetStreamContext

from libs.audit.trail import Trail
from libs.contracts.scheduler import ENGINE
from libs.runtime import logs
from libs.runtime.bus import PEER_OR_BUS_AWAY
from libs.runtime.consumer import Consumer
from services.scheduler import domain
from services.scheduler.resolution import Lateness
from services.scheduler.store import Due, Engine, Timers, due

__all__ = ["Firing"]

_log = logging.getLogger(__name__)
_DURABLE = "scheduler"
_IN_FLIGHT = 4096
_PURGE_EVERY_S = 5.0


class Firing:
    def __init__(
        self,
        timers: Timers,
        engine: Engine,
        lateness: Lateness,
        *,
        clock: Callable[[], datetime],
    ) -> None:
        self._timers, self._engine, self._lateness = timers, engine, lateness
        self._clock = clock

    def consumer(self, js: JetStreamContext, *, trail: Trail | None = None) -> Consumer:
        """The due messages, shared by every replica. A fire holds its message un-acked for
        up to ARM_EARLY, so many are in hand at once; one a dead replica held comes back
        after ten seconds."""
        return Consumer(
            js,
            stream=ENGINE.name,
            durable=_DURABLE,
            subjects=["scheduler.due.>"],
            read=due,
            handle=self.fire,
            max_in_flight=_IN_FLIGHT,
            ack_wait=10,
            trail=trail,
        )

    async def forget_handled(self) -> None:
        """Every few seconds, one range purge of the due messages already handled (deleting
        each one as it was handled slowed the server down run after run)."""
        while True:
            await asyncio.sleep(_PURGE_EVERY_S)
            try:
                await self._engine.forget_handled(_DURABLE)
            except PEER_OR_BUS_AWAY as exc:  # the bus away: nothing to trace
                error = logs.error_text(exc)
                _log.warning("purge of handled due messages failed", extra={"error": error})
            except Exception:  # housekeeping; the next round will do it
                _log.warning("purge of handled due messages failed", exc_info=True)

    async def fire(self, when: Due) -> None:
        """Hold until the exact due time, then settle; raising re-delivers it."""
        hold = (when.due_at - self._clock()).total_seconds()
        if hold > 0:  # armed early by at most ARM_EARLY: hold the rest, still un-acked
            await asyncio.sleep(hold)
        await self._settle(when.owner, when.key, when.timer_id)

    async def _settle(self, owner: str, key: str, timer_id: str) -> None:
        # The time is read as the timer is decided, after its read: a fire held up by a
        # bus that was down is marked as late as it really is.
        before, timer = await self._timers.change(
            owner, key, lambda t: t and (domain.fire(t, timer_id, now=self._clock()) or t)
        )
        if timer is None or timer.state != "fired" or timer.id != timer_id:
            return  # canceled, replaced, or gone: the loser of the race does nothing
        if timer != before:
            self._lateness.record(timer.late_ms or 0.0)
        # One fired before a crash is delivered again: the Msg-Id drops a repeat.
        await self._engine.deliver(domain.delivery(timer), timer_id)
