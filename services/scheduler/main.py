"""`python -m services.scheduler.main`: the timer engine, until SIGTERM."""

import asyncio
import logging
import re
from datetime import UTC, datetime, timedelta

from libs.audit.trail import Trail
from libs.contracts import SERVICES
from libs.contracts.principal import Principal
from libs.contracts.scheduler import CONTRACT, Schedule
from libs.runtime import logs
from libs.runtime.bus import PEER_OR_BUS_AWAY
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from libs.runtime.tasks import ended
from services.scheduler.firing import Firing
from services.scheduler.handlers import Handlers
from services.scheduler.resolution import Lateness
from services.scheduler.store import open_store

_log = logging.getLogger(__name__)


def clock() -> datetime:
    return datetime.now(UTC)


async def probe(handlers: Handlers, replica: str, count: int = 10) -> None:
    """Timers of its own, due within two seconds, so the resolution is measured at once."""
    me = Principal(org="tether", sub=f"service:{CONTRACT.name}")
    for i in range(count):
        due = clock() + timedelta(milliseconds=600 + 137 * i)
        name = re.sub(r"[^A-Za-z0-9_-]", "-", replica)[:64]
        request = Schedule(key=f"probe.{name}.{i}", due_at=due, target="probe")
        await handlers.schedule(request, me)


async def serve(svc: Service, targets: dict[str, tuple[str, ...]] | None = None) -> None:
    """Serve the subjects and fire timers until `svc` is stopped. `targets`: each owner's
    timer targets, by default what every service's contract names."""
    if targets is None:
        targets = {s.name: s.timer_targets for s in SERVICES if s.timer_targets}
    timers, engine = await open_store(svc.js, replicas=svc.settings.js_replicas)
    lateness = Lateness()
    handlers = Handlers(timers, engine, lateness, targets=targets, clock=clock)
    firing = Firing(timers, engine, lateness, clock=clock)
    trail = Trail(svc.nc, service=CONTRACT.name)
    serving = asyncio.create_task(
        svc.serve(handlers.table(), [firing.consumer(svc.js, trail=trail)])
    )
    housekeeping = asyncio.create_task(firing.forget_handled())
    try:
        try:
            await probe(handlers, svc.settings.replica)
        except PEER_OR_BUS_AWAY as exc:  # a measure: the bus away as it starts stops nothing
            _log.warning("resolution probe not scheduled", extra={"error": logs.error_text(exc)})
        await serving
    finally:
        svc.stop()
        await asyncio.gather(serving, ended(housekeeping), return_exceptions=True)
        await trail.settle()


async def main(settings: Settings) -> None:
    async with Service(CONTRACT, settings) as svc:
        await serve(svc)


if __name__ == "__main__":
    run(main, CONTRACT.name)
