"""`python -m services.mod.main`: mods, the surface, layers and drafts, until SIGTERM.
Besides every service's settings, its own: `ModSettings`."""

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from importlib.resources import files

import msgspec

from libs.audit.trail import Trail
from libs.contracts.mod import CONTRACT, Manifest
from libs.contracts.scheduler import Fired
from libs.contracts.streams import TIMERS, timer_subject
from libs.runtime.consumer import RETRY, Consumer, Retry, events
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.mod.domain import manifests
from services.mod.domain.review import reviewer
from services.mod.handlers import Handlers
from services.mod.settings import ModSettings
from services.mod.store import open_store


def clock() -> datetime:
    return datetime.now(UTC)


def first_party() -> list[Manifest]:
    """The hanzo layer: the first-party mods, shipped as data and checked like any other."""
    shipped = msgspec.json.decode(files("services.mod").joinpath("hanzo.json").read_bytes())
    mods = shipped["mods"]
    slots = frozenset(
        f"hanzo/{m['id']}/{a['id']}:{s}"
        for m in mods
        for a in m["contributes"].get("apps", [])
        for s in a.get("slots", [])
    )
    return [manifests.check(m, slots=slots) for m in mods]


async def serve(
    svc: Service,
    clock: Callable[[], datetime] = clock,
    *,
    draft_ttl: timedelta = timedelta(days=1),
    review: str = "",
    hanzo: Sequence[Manifest] | None = None,
    retry: Retry = RETRY,
) -> None:
    store = await open_store(svc.nc, draft_ttl=draft_ttl, replicas=svc.settings.js_replicas)
    trail = Trail(svc.nc, service=CONTRACT.name)
    handlers = Handlers(
        svc.nc,
        store,
        trail,
        clock,
        hanzo=first_party() if hanzo is None else hanzo,
        reviewer=reviewer(review),
        draft_ttl=draft_ttl,
    )
    end, expiry = timer_subject("mod", "draft_end"), timer_subject("mod", "draft_expiry")

    async def fired(timer: Fired) -> None:
        match timer.target:
            case "draft_end":
                await handlers.draft_end(timer)
            case "draft_expiry":
                await handlers.draft_expiry(timer)

    reader = Consumer(
        svc.js,
        stream=TIMERS.name,
        durable=CONTRACT.name,
        subjects=[end, expiry],
        read=events({end: Fired, expiry: Fired}),
        handle=fired,
        retry=retry,
        # A window's end asks the ladder for the person's level: with the ladder away past
        # every try, it is parked and done again later, until it is back. Dropped, the
        # draft would stay open past the time it says it commits, until it expired.
        dead=lambda timer, _: fired(timer),
        trail=trail,
    )
    await svc.serve(handlers.table(), [reader])
    await trail.settle()


async def main(settings: Settings) -> None:
    own = ModSettings.from_env()
    first_party()  # shipped data that does not check stops the service before it connects
    async with Service(CONTRACT, settings) as svc:
        await serve(svc, draft_ttl=timedelta(seconds=own.draft_ttl), review=own.reviewer)


if __name__ == "__main__":
    run(main, CONTRACT.name)
