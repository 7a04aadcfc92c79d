"""`python -m services.chonk.main`: the manager agents, until SIGTERM."""

from datetime import UTC, datetime, timedelta
from importlib.resources import files

from libs.audit.trail import Trail
from libs.contracts.chonk import CONTRACT, HANDOFF_REQUESTED, HandoffRequest
from libs.contracts.rooms import ANSWER_STORED, BOT_MESSAGE, BotMessage, MessageStored
from libs.contracts.scheduler import Fired
from libs.contracts.streams import EVENTS, TIMERS, timer_subject
from libs.runtime.consumer import RETRY, Consumer, Retry, events
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.chonk.cadencing import CADENCE
from services.chonk.carrying import CHASE, LAPSE
from services.chonk.covering import COVER
from services.chonk.domain import charters
from services.chonk.handlers import Handlers
from services.chonk.store import open_store


def clock() -> datetime:
    return datetime.now(UTC)


def shipped() -> tuple[dict, frozenset[str]]:
    """The charters and the never list; data that does not check stops the service."""
    return charters.load(files("services.chonk").joinpath("charters.json").read_bytes())


async def serve(svc: Service, *, retry: Retry = RETRY) -> None:
    """Serve the subjects, the chaser's stages and the cadences as they come due, the
    handoffs other Chonks send and the answers to the Chonks' questions, until `svc` is
    stopped."""
    roster, never = shipped()
    kept = timedelta(seconds=svc.settings.settled_kept)
    store = await open_store(svc.js, replicas=svc.settings.js_replicas, kept=kept)
    await store.index_reports()
    trail = Trail(svc.nc, service=CONTRACT.name)
    handlers = Handlers(svc.nc, store, trail, roster, never, clock)
    targets = {
        CHASE: handlers.stage_due,
        CADENCE: handlers.cadence_due,
        COVER: handlers.cover_due,
        LAPSE: handlers.proposal_closed,
    }
    subjects = {timer_subject(CONTRACT.name, target): Fired for target in targets}

    async def fired(timer: Fired) -> None:
        await targets[timer.target](timer)

    timers = Consumer(
        svc.js,
        stream=TIMERS.name,
        durable=CONTRACT.name,
        subjects=list(subjects),
        read=events(subjects),
        handle=fired,
        retry=retry,
        # What a timer starts tells someone (an escalation, a chase's stage, a cadence's
        # report): with the rooms away past every try, it is parked and done again later,
        # until they are back. Dropped, the escalation contact was never told.
        dead=lambda timer, _: fired(timer),
        trail=trail,
    )

    async def heard(event: HandoffRequest | MessageStored | BotMessage) -> None:
        match event:
            case HandoffRequest():
                await handlers.received(event)
            case BotMessage():
                await handlers.written(event)
            case MessageStored(room=room, answers=int(seq), choice=choice) if choice is not None:
                await handlers.decided(room, seq, choice)

    async def unheard(event: HandoffRequest | MessageStored | BotMessage, _: str) -> None:
        match event:
            case MessageStored(room=room, answers=int(seq), choice=choice) if choice is not None:
                await handlers.undone(room, seq, choice)

    heard_events = Consumer(
        svc.js,
        stream=EVENTS.name,
        durable=CONTRACT.name,
        subjects=[HANDOFF_REQUESTED.name, ANSWER_STORED.name, BOT_MESSAGE.name],
        read=events(
            {
                HANDOFF_REQUESTED.name: HandoffRequest,
                ANSWER_STORED.name: MessageStored,
                BOT_MESSAGE.name: BotMessage,
            }
        ),
        handle=heard,
        retry=retry,
        dead=unheard,
        trail=trail,
    )
    await svc.serve(handlers.table(), [timers, heard_events])
    await trail.settle()


async def main(settings: Settings) -> None:
    shipped()
    async with Service(CONTRACT, settings) as svc:
        await serve(svc)


if __name__ == "__main__":
    run(main, CONTRACT.name)
