"""Every subject on the bus and the msgspec types that cross it."""

from libs.contracts import poa, scheduler
from libs.contracts.registry import ServiceContract, Subject

__all__ = ["SERVICES", "subject"]

# The services that exist, in the order `tether up` starts them.
SERVICES: tuple[ServiceContract, ...] = (scheduler.CONTRACT, poa.CONTRACT)

_BY_NAME = {s.name: s for svc in SERVICES for s in (svc.health, *svc.subjects)}


def subject(name: str) -> Subject:
    return _BY_NAME[name]
