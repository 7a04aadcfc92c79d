"""Every subject on the bus, with its request, reply and event types, and who may use it.

The registry is the single source for three things: what each service serves, what the
gateway may forward, and the NATS permissions each credential gets (libs/contracts/permissions).
"""

from collections.abc import Iterable
from functools import cache

import msgspec

from libs.contracts import health
from libs.contracts.streams import DEAD, EVENTS, StreamSpec

__all__ = [
    "ANY_SERVICE",
    "REPLIES_BUCKET",
    "TIMER_OWNERS",
    "Event",
    "ServiceContract",
    "Subject",
    "health_subject",
    "live_subject",
    "request_subject",
    "service_contract",
]

# A caller that stands for every service owning timers.
TIMER_OWNERS = "timer-owners"
# A caller that stands for every service.
ANY_SERVICE = "any-service"
# Where the runtime keeps each service's answers to keyed requests (libs/runtime/replies).
REPLIES_BUCKET = "replies"


class Subject(msgspec.Struct, frozen=True):
    """A request/reply subject `tether.<service>.<verb>`, served in the service's queue group."""

    name: str
    request: type
    reply: type
    summary: str
    callers: frozenset[str] = frozenset({"gateway"})
    # Served as `<name>.<caller>`, each caller allowed only its own: the caller's identity is
    # the subject it could publish to, proven by its NATS credential, not a header.
    by_caller: bool = False
    # Reached with no principal: the request proves itself (a carrier's signed webhook).
    public: bool = False
    # The handler makes its change once under the request key, in the same write, answers
    # a run again as it was and refuses another request with the key (`request_digest`):
    # the runtime keeps no answer for it.
    keyed_itself: bool = False

    @property
    def service(self) -> str:
        return self.name.split(".")[1]

    @property
    def served(self) -> str:
        return f"{self.name}.*" if self.by_caller else self.name

    def published_by(self, role: str) -> str:
        return f"{self.name}.{role}" if self.by_caller else self.name


class Event(msgspec.Struct, frozen=True):
    """An event `tether.evt.<service>.<noun>.<verb>` on the EVENTS stream."""

    name: str
    type: type
    summary: str
    readers: frozenset[str] = frozenset()

    @property
    def service(self) -> str:
        return self.name.split(".")[2]


class ServiceContract(msgspec.Struct, frozen=True):
    """What one service serves and publishes, and the durable state it alone owns.

    `buckets` and `streams` are the KV buckets and streams its credential may manage and
    publish to; who may call a subject is on the subject itself (`Subject.callers`, where
    TIMER_OWNERS means every service that names `timer_targets`). `timer_targets` are the
    targets the scheduler may deliver this service's timers to. `watched` are buckets of its
    own the gateway may watch (read-only) to stream their changes to the clients it has
    authorized; `gateway_reads` buckets of its own the gateway may read a key of, as the
    bucket's leader holds it, and nothing else.
    """

    name: str
    subjects: tuple[Subject, ...] = ()
    events: tuple[Event, ...] = ()
    buckets: tuple[str, ...] = ()
    streams: tuple[StreamSpec, ...] = ()
    shared_streams: tuple[str, ...] = (EVENTS.name, DEAD.name)
    timer_targets: tuple[str, ...] = ()
    watched: tuple[str, ...] = ()
    gateway_reads: tuple[str, ...] = ()

    @property
    def health(self) -> Subject:
        return health_subject(self.name)


def request_subject(
    service: str, verb: str, request: type, reply: type, summary: str, **fields: object
) -> Subject:
    """`tether.<service>.<verb>`, the shape every request subject has."""
    return Subject(
        name=f"tether.{service}.{verb}",
        request=request,
        reply=reply,
        summary=summary,
        **fields,  # type: ignore[arg-type]
    )


@cache
def health_subject(service: str) -> Subject:
    return Subject(
        name=f"tether.{service}.health",
        request=health.HealthRequest,
        reply=health.Health,
        summary=f"Is this replica of {service} serving?",
        callers=frozenset({"gateway", "operator"}),
        public=True,
    )


def live_subject(service: str, *tokens: str) -> str:
    """`tether.live.<service>.…`: what a service publishes for the gateway to stream to
    clients (core NATS, not stored: the stored copy is in the service's own stream)."""
    return ".".join(("tether.live", service, *tokens))


def service_contract(
    name: str,
    subjects: Iterable[Subject] = (),
    **fields: object,
) -> ServiceContract:
    subjects = tuple(subjects)
    wrong = [s.name for s in subjects if s.service != name]
    if wrong:
        raise ValueError(f"{name} cannot serve subjects of another service: {wrong}")
    return ServiceContract(name=name, subjects=subjects, **fields)  # type: ignore[arg-type]
