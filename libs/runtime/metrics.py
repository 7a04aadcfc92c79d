"""The Prometheus metrics every service exposes, labelled by service."""

from functools import cache
from typing import TypeVar

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["IN_FLIGHT", "REQUESTS", "REQUEST_SECONDS", "child"]

M = TypeVar("M", Counter, Histogram)

REQUESTS = Counter(
    "tether_requests",
    "Requests handled, by subject and outcome (ok, or the problem's rule).",
    ["service", "subject", "outcome"],
)
REQUEST_SECONDS = Histogram(
    "tether_request_seconds",
    "Time from a request's arrival to its reply.",
    ["service", "subject"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
IN_FLIGHT = Gauge("tether_in_flight", "Requests being handled now.", ["service"])


# Looking a labelled child up costs more than counting with it; each is looked up once.
@cache
def child(metric: M, *labels: object) -> M:
    return metric.labels(*labels)
