"""The Prometheus metrics every service exposes, labelled by service."""

from functools import cache

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["IN_FLIGHT", "handled", "timer"]

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


# Looking a labelled child up costs more than counting; each is looked up once.
@cache
def handled(service: str, subject: str, outcome: str) -> Counter:
    return REQUESTS.labels(service, subject, outcome)


@cache
def timer(service: str, subject: str) -> Histogram:
    return REQUEST_SECONDS.labels(service, subject)
