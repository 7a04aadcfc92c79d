"""`python -m services.audit.main`: the one writer of every org's audit chain, until SIGTERM."""

from collections.abc import Callable
from datetime import UTC, datetime

from libs.contracts.audit import CONTRACT
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.audit.handlers import Handlers
from services.audit.store import open_store


def clock() -> datetime:
    return datetime.now(UTC)


async def serve(svc: Service, clock: Callable[[], datetime] = clock) -> None:
    store = await open_store(svc.js, replicas=svc.settings.js_replicas)
    await svc.serve(Handlers(store, svc.replies, clock=clock).table())


async def main(settings: Settings) -> None:
    async with Service(CONTRACT, settings) as svc:
        await serve(svc)


if __name__ == "__main__":
    run(main, CONTRACT.name)
