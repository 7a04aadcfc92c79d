"""Every subject on the bus and the msgspec types that cross it."""

from libs.contracts import agents, poa, rooms, scheduler
from libs.contracts.registry import ServiceContract

__all__ = ["SERVICES"]

# The services that exist, in the order `tether up` starts them.
SERVICES: tuple[ServiceContract, ...] = (
    scheduler.CONTRACT,
    poa.CONTRACT,
    agents.CONTRACT,
    rooms.CONTRACT,
)
