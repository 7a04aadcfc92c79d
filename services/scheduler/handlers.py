"""One handler per `tether.scheduler.*` subject."""

import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime

from libs.contracts import scheduler as contract
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.runtime.service import Handler
from services.scheduler import domain
from services.scheduler.resolution import Lateness
from services.scheduler.store import Engine, Timers

__all__ = ["Handlers"]

Clock = Callable[[], datetime]
_log = logging.getLogger(__name__)


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
        timer = domain.scheduled(
            req, owner, self._targets.get(owner, ()), now=self._clock(), timer_id=uuid.uuid4().hex
        )
        # Armed before it is recorded: a recorded pending timer always has its schedule.
        await self._engine.arm(timer, domain.armed_at(timer))
        try:
            before, _ = await self._timers.change(owner, req.key, lambda _: timer)
        except Exception:
            await self._engine.disarm(timer)
            raise
        if before is not None and before.state == "pending":
            await self._engine.disarm(before)  # rescheduled: the old one is stale
        return timer

    async def cancel(self, req: contract.Cancel, p: Principal) -> contract.Canceled:
        owner = domain.owner_of(p)

        def cancel(timer: contract.Timer | None) -> contract.Timer:
            if timer is None:
                raise Refused("timer-not-found", 404, f"{owner} has no timer {req.key}")
            return domain.cancel(timer)[0] or timer

        before, after = await self._timers.change(owner, req.key, cancel)
        assert before is not None
        if after != before:
            await self._engine.disarm(before)
        return contract.Canceled(key=req.key, outcome=domain.cancel(before)[1])  # type: ignore[arg-type]

    async def get(self, req: contract.GetTimer, p: Principal) -> contract.Timer:
        owner = domain.owner_of(p)
        found = await self._timers.get(owner, req.key)
        if found is None:
            raise Refused("timer-not-found", 404, f"{owner} has no timer {req.key}")
        return found

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
