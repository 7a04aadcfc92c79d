"""`tether.<service>.health`: is a replica serving?"""

from libs.contracts.base import Contract

__all__ = ["Health", "HealthRequest"]


class HealthRequest(Contract):
    """An empty request: the question is the subject."""


class Health(Contract):
    """One replica's answer. `uptime_s` in seconds; `in_flight` requests being handled now."""

    service: str
    replica: str
    ok: bool
    uptime_s: float
    in_flight: int = 0
