"""The Prometheus metrics every service exposes, labelled by service."""

import asyncio
from functools import cache
from typing import TypeVar

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["IN_FLIGHT", "REQUESTS", "REQUEST_SECONDS", "TASKS", "child", "count_tasks"]

M = TypeVar("M", Counter, Histogram)

REQUESTS = Counter(
    "tether_requests",
    "Requests handled, by subject and outcome (ok, the problem's rule, or replayed: a "
    "keyed request answered as it was).",
    ["service", "subject", "outcome"],
)
REQUEST_SECONDS = Histogram(
    "tether_request_seconds",
    "Time from a request's arrival to its reply.",
    ["service", "subject"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
IN_FLIGHT = Gauge("tether_in_flight", "Requests being handled now.", ["service"])
# Read when scraped, in the process's loop: a count that only grows is a task leak.
TASKS = Gauge("tether_tasks", "asyncio tasks alive in this process.")


# Looking a labelled child up costs more than counting with it; each is looked up once.
@cache
def child(metric: M, *labels: object) -> M:
    return metric.labels(*labels)


def count_tasks() -> None:
    """From now on, `TASKS` counts the tasks of the loop running this call."""
    loop = asyncio.get_running_loop()
    TASKS.set_function(lambda: len(asyncio.all_tasks(loop)))
