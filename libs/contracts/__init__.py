"""Every subject on the bus and the msgspec types that cross it."""

from libs.contracts import agents, audit, chonk, ladder, mod, poa, rooms, scheduler
from libs.contracts.accounts import ACCOUNT_CREATED
from libs.contracts.registry import Event, ServiceContract

__all__ = ["EXTERNAL_EVENTS", "SERVICES"]

# The services that exist, in the order `tether up` starts them.
SERVICES: tuple[ServiceContract, ...] = (
    audit.CONTRACT,
    scheduler.CONTRACT,
    poa.CONTRACT,
    agents.CONTRACT,
    rooms.CONTRACT,
    ladder.CONTRACT,
    mod.CONTRACT,
    chonk.CONTRACT,
)

# Events published from outside tether's services (an identity provider's hook).
EXTERNAL_EVENTS: tuple[Event, ...] = (ACCOUNT_CREATED,)
