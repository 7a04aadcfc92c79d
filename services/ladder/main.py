"""`python -m services.ladder.main`: the ladder, until SIGTERM."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from libs.audit.trail import Trail
from libs.contracts.ladder import CONTRACT
from libs.contracts.rooms import ANSWER_STORED, MessageStored
from libs.contracts.scheduler import Fired
from libs.contracts.streams import EVENTS, TIMERS, timer_subject
from libs.runtime.consumer import RETRY, Consumer, Retry, events
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.ladder.handlers import WINDOW_END, Handlers
from services.ladder.store import open_store


def clock() -> datetime:
    return datetime.now(UTC)


async def serve(
    svc: Service,
    clock: Callable[[], datetime] = clock,
    *,
    retry: Retry = RETRY,
) -> None:
    """Serve the subjects, the windows' ends and the answers until `svc` is stopped."""
    kept = timedelta(seconds=svc.settings.settled_kept)
    store = await open_store(svc.nc, replicas=svc.settings.js_replicas, kept=kept)
    trail = Trail(svc.nc, service=CONTRACT.name)
    handlers = Handlers(svc.nc, store, trail, clock)
    window_end = timer_subject(CONTRACT.name, WINDOW_END)

    async def answered(event: MessageStored) -> None:
        match event:
            case MessageStored(room=room, answers=int(seq), choice=choice) if choice is not None:
                await handlers.answered(room, seq, choice)

    async def unsent(event: MessageStored, why: str) -> None:
        if event.answers is not None:
            await handlers.unsent(event.room, event.answers, why)

    readers = [
        Consumer(
            svc.js,
            stream=TIMERS.name,
            durable=CONTRACT.name,
            subjects=[window_end],
            read=events({window_end: Fired}),
            handle=handlers.window_ended,
            retry=retry,
            dead=handlers.window_failed,
            trail=trail,
        ),
        Consumer(
            svc.js,
            stream=EVENTS.name,
            durable=CONTRACT.name,
            subjects=[ANSWER_STORED.name],
            read=events({ANSWER_STORED.name: MessageStored}),
            handle=answered,
            retry=retry,
            dead=unsent,
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
