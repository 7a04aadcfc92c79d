"""One handler per `tether.scheduler.*` subject."""

import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime

from libs.contracts import scheduler as contract
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.runtime.kv import Conflict
from libs.runtime.service import Handler
from services.scheduler import domain
from services.scheduler.resolution import Lateness
from services.scheduler.store import Engine, Timers

__all__ = ["Handlers"]

Clock = Callable[[], datetime]
_log = logging.getLogger(__name__)
_ATTEMPTS = 16


class Handlers:
    def __init__(
        self,
        timers: Timers,
        engine: Engine,
        lateness: Lateness,
        *,
        targets: Mapping[str, tuple[str, ...]],
        clock: Clock,
    ) -> None:
        self._timers, self._engine, self._lateness = timers, engine, lateness
        self._targets, self._clock = targets, clock

    async def schedule(self, req: contract.Schedule, p: Principal) -> contract.Timer:
        owner = domain.owner_of(p)
        for _ in range(_ATTEMPTS):
            now = self._clock()
            timer = domain.scheduled(
                req, owner, self._targets.get(owner, ()), now=now, timer_id=uuid.uuid4().hex
            )
            found = await self._timers.get(owner, req.key)
            # Armed before it is recorded: a recorded pending timer always has its schedule.
            await self._engine.arm(timer, domain.armed_at(timer))
            try:
                await self._timers.put(timer, found[1] if found else 0)
            except Conflict:
                await self._engine.disarm(timer)
                continue
            if found is not None and found[0].state == "pending":
                await self._engine.disarm(found[0])  # rescheduled: the old one is stale
            return timer
        raise Refused("timer-contended", 503, f"{req.key}: changed too often at once; retry")

    async def cancel(self, req: contract.Cancel, p: Principal) -> contract.Canceled:
        owner = domain.owner_of(p)
        for _ in range(_ATTEMPTS):
            found = await self._timers.get(owner, req.key)
            if found is None:
                raise Refused("timer-not-found", 404, f"{owner} has no timer {req.key}")
            timer, revision = found
            canceled, outcome = domain.cancel(timer)
            if canceled is not None:
                try:
                    await self._timers.put(canceled, revision)
                except Conflict:
                    continue  # it fired or was rescheduled meanwhile: decide again
                await self._engine.disarm(timer)
            return contract.Canceled(key=req.key, outcome=outcome)  # type: ignore[arg-type]
        raise Refused("timer-contended", 503, f"{req.key}: changed too often at once; retry")

    async def get(self, req: contract.GetTimer, p: Principal) -> contract.Timer:
        owner = domain.owner_of(p)
        found = await self._timers.get(owner, req.key)
        if found is None:
            raise Refused("timer-not-found", 404, f"{owner} has no timer {req.key}")
        return found[0]

    async def list_mine(self, req: contract.ListTimers, p: Principal) -> contract.TimerList:
        timers = await self._timers.of_owner(domain.owner_of(p), req.prefix)
        return contract.TimerList(timers=sorted(timers, key=lambda t: t.due_at))

    async def resolution(self, _: contract.ResolutionRequest, __: Principal) -> contract.Resolution:
        return self._lateness.resolution()

    def table(self) -> Mapping[Subject, Handler]:
        return {
            contract.SCHEDULE: self.schedule,
            contract.CANCEL: self.cancel,
            contract.GET: self.get,
            contract.LIST: self.list_mine,
            contract.RESOLUTION: self.resolution,
        }
