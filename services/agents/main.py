"""`python -m services.agents.main`: the agents service, until SIGTERM."""

from collections.abc import Callable
from datetime import UTC, datetime
from importlib.resources import files

from libs.audit.trail import Trail
from libs.contracts.accounts import ACCOUNT_CREATED, AccountCreated
from libs.contracts.agents import CONTRACT, METER, SPEAK, Persona
from libs.contracts.rooms import MESSAGE_STORED, MessageStored
from libs.contracts.streams import EVENTS
from libs.model import Model, Scripted, model_from_env
from libs.runtime.consumer import RETRY, Consumer, Retry, events
from libs.runtime.service import Service, run
from libs.runtime.settings import Settings
from services.agents.answering import Answering, person_of
from services.agents.domain.catalog import Catalog, load_catalog
from services.agents.domain.personas import load_presets
from services.agents.domain.prompt import acknowledged
from services.agents.handlers import Handlers
from services.agents.metering import Metering
from services.agents.store import open_store


def clock() -> datetime:
    return datetime.now(UTC)


def catalog_and_presets() -> tuple[Catalog, dict[str, Persona]]:
    """The shipped data; a catalog or preset that does not decode stops the service here."""
    here = files("services.agents")
    return (
        load_catalog(here.joinpath("catalog.json").read_bytes()),
        load_presets(here.joinpath("personas.json").read_bytes()),
    )


async def serve(
    svc: Service,
    model: Model,
    clock: Callable[[], datetime] = clock,
    *,
    retry: Retry = RETRY,
) -> None:
    """Serve the subjects and read the events until `svc` is stopped."""
    catalog, presets = catalog_and_presets()
    store = await open_store(svc.js, replicas=svc.settings.js_replicas)
    trail = Trail(svc.nc, service=CONTRACT.name)
    handlers = Handlers(store, trail, catalog, presets, clock)
    answering = Answering(svc.nc, store, handlers, trail, model, presets, clock)
    readers = [
        Consumer(
            svc.js,
            stream=EVENTS.name,
            durable=CONTRACT.name,
            subjects=[ACCOUNT_CREATED.name, MESSAGE_STORED.name],
            read=events({ACCOUNT_CREATED.name: AccountCreated, MESSAGE_STORED.name: MessageStored}),
            handle=answering.handle,
            in_order_of=person_of,
            retry=retry,
            dead=answering.undrafted,
            trail=trail,
        ),
        Consumer(
            svc.js,
            stream=METER.name,
            durable="meter",
            service=CONTRACT.name,
            subjects=["agents.run.ended.>"],
            read=Metering.read,
            handle=Metering(store).handle,
            in_order=True,
            trail=trail,
        ),
    ]
    await svc.serve({**handlers.table(), SPEAK: answering.speak}, readers)
    await trail.settle()


async def main(settings: Settings) -> None:
    catalog_and_presets()  # shipped data that does not load stops the service before it connects
    model = model_from_env(Scripted(acknowledged))
    try:
        async with Service(CONTRACT, settings) as svc:
            await serve(svc, model)
    finally:  # a stop before the bus was reached too: an unclosed session logs an error
        await model.close()


if __name__ == "__main__":
    run(main, CONTRACT.name)
