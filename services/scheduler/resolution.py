"""The engine's timing resolution, measured from the lateness of recent fires."""

import math
from collections import deque

from prometheus_client import Histogram

from libs.contracts.scheduler import Resolution

__all__ = ["Lateness"]


LATE = Histogram(
    "tether_scheduler_late_seconds",
    "How late after its due time each timer fired: a window's end, a follow-up, a cadence.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60),
)


class Lateness:
    """The last `size` lateness samples (ms) of this replica's fires, each counted too."""

    def __init__(self, size: int = 2000) -> None:
        self._samples: deque[float] = deque(maxlen=size)

    def record(self, late_ms: float) -> None:
        self._samples.append(late_ms)
        LATE.observe(max(0.0, late_ms) / 1000)

    def resolution(self) -> Resolution:
        ordered = sorted(self._samples)
        if not ordered:
            return Resolution(resolution_ms=0, p50_ms=0, p99_ms=0, max_ms=0, samples=0)

        def at(q: float) -> float:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

        # Offer nothing finer than the worst one-in-a-hundred fire, rounded up to a ms.
        return Resolution(
            resolution_ms=float(math.ceil(max(at(0.99), 1.0))),
            p50_ms=at(0.50),
            p99_ms=at(0.99),
            max_ms=ordered[-1],
            samples=len(ordered),
        )
