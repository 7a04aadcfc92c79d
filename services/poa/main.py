"""`python -m services.poa.main`: the poa service, until SIGTERM."""

from datetime import UTC, datetime

from libs.audit.trail import Trail
from libs.contracts.poa import CONTRACT
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.poa.handlers import Handlers
from services.poa.store import open_stores


async def main(settings: Settings) -> None:
    async with Service(CONTRACT, settings) as svc:
        grants, ledger = await open_stores(svc.js, replicas=settings.js_replicas)
        trail = Trail(svc.nc, service=CONTRACT.name)
        await svc.serve(Handlers(grants, ledger, trail, clock=lambda: datetime.now(UTC)).table())


if __name__ == "__main__":
    run(main, CONTRACT.name)
