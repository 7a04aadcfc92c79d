"""`python -m services.poa.main`: the poa service, until SIGTERM."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from libs.audit.trail import Trail
from libs.contracts.agents import AGENT_REMOVED, AgentRemoved
from libs.contracts.poa import CONTRACT
from libs.contracts.rooms import ANSWER_STORED, MessageStored
from libs.contracts.scheduler import Fired
from libs.contracts.streams import EVENTS, TIMERS, timer_subject
from libs.runtime.consumer import RETRY, Consumer, Retry, events
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.poa.asking import ASK_EXPIRY, Asking
from services.poa.handlers import Handlers
from services.poa.store import open_stores


def clock() -> datetime:
    return datetime.now(UTC)


async def serve(
    svc: Service, clock: Callable[[], datetime] = clock, *, retry: Retry = RETRY
) -> None:
    """Serve the subjects, the asks' expiries and their answers in rooms until stopped."""
    kept = timedelta(seconds=svc.settings.settled_kept)
    replicas = svc.settings.js_replicas
    grants, ledger, asks = await open_stores(svc.js, replicas=replicas, asks_kept=kept)
    trail = Trail(svc.nc, service=CONTRACT.name)
    asking = Asking(svc.nc, grants, ledger, asks, trail, clock)
    expiry = timer_subject(CONTRACT.name, ASK_EXPIRY)

    handlers = Handlers(svc.nc, grants, ledger, asking, trail, clock)

    async def heard(event: MessageStored | AgentRemoved) -> None:
        match event:
            case MessageStored(room=room, answers=int(seq), choice=choice) if choice is not None:
                await asking.answered_in_room(room, seq, choice)
            case AgentRemoved():
                await handlers.delegate_removed(event)

    readers = [
        Consumer(
            svc.js,
            stream=TIMERS.name,
            durable=CONTRACT.name,
            subjects=[expiry],
            read=events({expiry: Fired}),
            handle=asking.expired,
            retry=retry,
            # An expiry asks the rooms for the person's answer first: with the rooms away
            # past every try, it is parked and done again later, until they are back.
            # Dropped, the ask would stay open and its agent wait on it for good.
            dead=lambda fired, _: asking.expired(fired),
            trail=trail,
        ),
        Consumer(
            svc.js,
            stream=EVENTS.name,
            durable=CONTRACT.name,
            subjects=[ANSWER_STORED.name, AGENT_REMOVED.name],
            read=events({ANSWER_STORED.name: MessageStored, AGENT_REMOVED.name: AgentRemoved}),
            handle=heard,
            retry=retry,
            trail=trail,
        ),
    ]
    await svc.serve(handlers.table(), readers)
    await trail.settle()


async def main(settings: Settings) -> None:
    async with Service(CONTRACT, settings) as svc:
        await serve(svc)


if __name__ == "__main__":
    run(main, CONTRACT.name)
