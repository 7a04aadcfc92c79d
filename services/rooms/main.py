"""`python -m services.rooms.main`: the rooms service, until SIGTERM.

Besides the service's settings, its own (`RoomsSettings`), and TETHER_LINES_KEY (64 hex
digits), or the file named by TETHER_LINES_KEY_FILE (default $TETHER_HOME/lines.key),
which seals personal lines' credentials. Outbound messages go through the recording
adapter (the only one there is).
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from libs.audit.trail import Trail
from libs.contracts.agents import AGENT_REMOVED, AgentRemoved
from libs.contracts.rooms import CONTRACT
from libs.contracts.streams import EVENTS
from libs.runtime.consumer import Consumer, events
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.rooms.domain.calls import SPEAK_WITHIN_S
from services.rooms.handlers import Handlers
from services.rooms.sealing import Sealer, sealer_from_env
from services.rooms.settings import RoomsSettings
from services.rooms.store import open_store
from services.rooms.transports import Recording


def clock() -> datetime:
    return datetime.now(UTC)


async def serve(
    svc: Service,
    sealer: Sealer,
    clock: Callable[[], datetime] = clock,
    *,
    speak_within: float = SPEAK_WITHIN_S,
) -> None:
    """Serve the subjects until `svc` is stopped."""
    kept = timedelta(seconds=svc.settings.settled_kept)
    store = await open_store(svc.nc, replicas=svc.settings.js_replicas, kept=kept)
    trail = Trail(svc.nc, service=CONTRACT.name)
    handlers = Handlers(
        svc.nc, store, trail, sealer, Recording(store), clock, speak_within=speak_within
    )
    removals = Consumer(
        svc.js,
        stream=EVENTS.name,
        durable=CONTRACT.name,
        subjects=[AGENT_REMOVED.name],
        read=events({AGENT_REMOVED.name: AgentRemoved}),
        handle=handlers.agent_removed,
        # Made by the release that added it: a removal of the week EVENTS keeps, read
        # then, would take an agent made again since out of the rooms it is in now.
        new_only=True,
        trail=trail,
    )
    await svc.serve(handlers.table(), [removals])
    await trail.settle()


async def main(settings: Settings) -> None:
    sealer, own = sealer_from_env(), RoomsSettings.from_env()
    async with Service(CONTRACT, settings) as svc:
        await serve(svc, sealer, speak_within=own.speak_within)


if __name__ == "__main__":
    run(main, CONTRACT.name)
