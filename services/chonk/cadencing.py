"""A tenant's cadences: started and stopped by an admin, listed with their next time, and
each time one comes round, its run, once for that time."""

from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import msgspec

from libs.contracts import chonk, scheduler
from libs.contracts.chonk import CONTRACT
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from services.chonk.domain import cadences
from services.chonk.running import Running, tenant_for
from services.chonk.simulations import tenant

__all__ = ["CADENCE", "Cadencing"]

CADENCE = "cadence"


class Cadencing(Running):
    async def cadence(self, req: chonk.StartCadence, p: Principal) -> chonk.CadenceStarted:
        """A cadence started, recorded first; one that runs already is answered as it
        runs. Its next time is timed either way: a start whose replica died before it
        timed it is made whole by the same start asked again."""
        data = tenant_for(req.tenant, p, "starts a cadence")
        cadence = _cadence(data, req.tenant, req.cadence)
        now = self._clock()

        def record(_: object, __: object) -> AbstractAsyncContextManager[object]:
            return self._trail.change(
                p.org, actor=p, action="chonk.cadence.start", target=req.cadence,
                data={"run": cadence.run},
            )  # fmt: skip

        _, since = await self._store.change_cadence(
            p.org, req.cadence, lambda running: running or now, record=record
        )
        assert since is not None
        timer = await self._cadence_timer(p.org, req.cadence, cadence, now)
        return _running(req.cadence, cadence, since, timer)

    async def list_cadences(self, _: chonk.ListCadences, p: Principal) -> chonk.CadenceList:
        data = tenant_for(p.org, p, "reads its cadences")
        now = self._clock()
        running = await self._store.cadences(p.org)
        listed = []
        for name, since in sorted(running.items()):
            cadence = _cadence(data, p.org, name)
            timer = _timer_of(p.org, name, cadences.next_at(cadence, now))
            listed.append(_running(name, cadence, since, timer))
        return chonk.CadenceList(cadences=listed)

    async def stop_cadence(self, req: chonk.StopCadence, p: Principal) -> chonk.CadenceStopped:
        """Stopped, recorded first: a time that comes round after runs nothing. Its next
        timer is cancelled too, so the scheduler holds nothing for it."""
        data = tenant_for(p.org, p, "stops a cadence")
        cadence = _cadence(data, p.org, req.cadence)

        def record(since: datetime, _: None) -> AbstractAsyncContextManager[object]:
            return self._trail.change(
                p.org, actor=p, action="chonk.cadence.stop", target=req.cadence,
                data={"run": cadence.run, "since": since.isoformat()},
            )  # fmt: skip

        before, _ = await self._store.change_cadence(
            p.org, req.cadence, lambda _: None, record=record
        )
        if before is not None:
            due = cadences.next_at(cadence, self._clock())
            timer = scheduler.Cancel(key=_timer_of(p.org, req.cadence, due).key)
            try:
                await call(self._nc, scheduler.CANCEL, timer, caller=CONTRACT.name)
            except Refused as exc:
                if exc.problem.rule != "timer-not-found":
                    raise  # none yet: a time under way times it, and it will run nothing
        return chonk.CadenceStopped(cadence=req.cadence, was_running=before is not None)

    async def _cadence_timer(
        self, org: str, name: str, cadence: cadences.Cadence, after: datetime
    ) -> scheduler.Schedule:
        return await self._timed(_timer_of(org, name, cadences.next_at(cadence, after)))

    async def cadence_due(self, fired: scheduler.Fired) -> None:
        """A cadence came round: the next time timed, then its run, once for this time.
        Timed first, a run that fails every try, or is refused, leaves the cadence coming
        round; timing it again is harmless (the timer's key is the time). One stopped
        runs nothing and times nothing."""
        due = msgspec.convert(fired.payload, _CadenceDue)
        if await self._store.running_since(due.org, due.cadence) is None:
            return
        data = tenant(due.org)
        cadence = msgspec.convert(data["cadences"][due.cadence], cadences.Cadence)
        spec = data["runs"][cadence.run]
        run_id = cadences.run_id(cadence, spec["run"]["id"], fired.due_at)
        me = Principal(org=due.org, sub=f"service:{CONTRACT.name}")
        # From now, if this time is handled late (the service away across the next): the
        # next is never in the past, which the scheduler refuses, and the times missed
        # meanwhile are not run one after another.
        after = max(fired.due_at, self._clock())
        await self._cadence_timer(due.org, due.cadence, cadence, after)
        await self._once(me, data, spec, run_id=run_id, trigger="cadence")


class _CadenceDue(msgspec.Struct, frozen=True):
    """The payload of a cadence's timer."""

    org: str
    cadence: str


def _timer_of(org: str, name: str, due: datetime) -> scheduler.Schedule:
    return scheduler.Schedule(
        key=f"cadence.{org}.{name}.{due:%Y%m%dT%H%M}",
        due_at=due,
        target=CADENCE,
        payload=_CadenceDue(org=org, cadence=name),
    )


def _cadence(data: dict[str, Any], tenant: str, name: str) -> cadences.Cadence:
    found = data.get("cadences", {}).get(name)
    if found is None:
        raise Refused("cadence-not-found", 404, f"{tenant} has no cadence {name}")
    return msgspec.convert(found, cadences.Cadence)


def _running(
    name: str, cadence: cadences.Cadence, since: datetime, timer: scheduler.Schedule
) -> chonk.CadenceStarted:
    return chonk.CadenceStarted(
        cadence=name, run=cadence.run, since=since, next_at=timer.due_at, timer=timer.key
    )
