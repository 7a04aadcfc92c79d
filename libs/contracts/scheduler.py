"""`tether.scheduler.*`: the one timer engine. Owners schedule one-shot timers by key; at
the due time the payload is delivered once to `tether.timer.<owner>.<target>` on TIMERS.

An owner calls `tether.scheduler.<verb>.<owner>`, and its NATS credential lets it publish
only under its own name, so the owner is proven by the bus, not claimed in a header. A
target must be one of its `timer_targets`. Keys are the owner's names for its timers: one
to eight tokens of letters, digits, `-` and `_`, joined by dots.
"""

from typing import Annotated, Any, Literal

import msgspec

from libs.contracts.base import Contract, Instant
from libs.contracts.registry import TIMER_OWNERS, Subject, request_subject, service_contract
from libs.contracts.streams import TIMERS, StreamSpec

__all__ = [
    "CONTRACT",
    "MAX_PAYLOAD",
    "Cancel",
    "Canceled",
    "Fired",
    "GetTimer",
    "ListTimers",
    "Resolution",
    "ResolutionRequest",
    "Schedule",
    "Timer",
    "TimerKey",
    "TimerList",
]

TimerKey = Annotated[
    str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}$(?!\n)")
]
Target = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$(?!\n)")]
State = Literal["pending", "fired", "canceled"]
MAX_PAYLOAD = 64 * 1024  # bytes of the payload's JSON


class Schedule(Contract):
    """Fire `key` once at `due_at` (RFC 3339 with an offset), delivering `payload` to the
    owner's `target`. Scheduling a key that is pending replaces it."""

    key: TimerKey
    due_at: Instant
    target: Target
    payload: Any = None


class Cancel(Contract):
    key: TimerKey


class Canceled(Contract):
    """`canceled`: it will never fire. `too_late`: it already fired, exactly once."""

    key: str
    outcome: Literal["canceled", "too_late"]


class GetTimer(Contract):
    key: TimerKey


class ListTimers(Contract):
    """The owner's timers whose key starts with `prefix`."""

    prefix: str = ""


class Timer(Contract):
    """A timer as stored. `late_ms` is how long after `due_at` it was delivered."""

    owner: str
    key: str
    due_at: Instant
    target: str
    state: State
    id: str
    scheduled_at: Instant
    payload: Any = None
    fired_at: Instant | None = None
    late_ms: float | None = None


class TimerList(Contract):
    timers: list[Timer]


class Fired(Contract):
    """What an owner reads on `tether.timer.<owner>.<target>`, once per timer."""

    owner: str
    key: str
    target: str
    due_at: Instant
    fired_at: Instant
    late_ms: float
    payload: Any = None


class ResolutionRequest(Contract):
    """What is the engine's timing resolution, measured?"""


class Resolution(Contract):
    """Lateness of recent fires, in milliseconds. An owner must not offer a wait shorter
    than `resolution_ms` (hip-0524 §5); 0 samples means nothing is measured yet."""

    resolution_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    samples: int


def _subject(verb: str, request: type, reply: type, summary: str) -> Subject:
    owners = frozenset({TIMER_OWNERS, "operator"})
    return request_subject(
        "scheduler", verb, request, reply, summary, callers=owners, by_caller=True
    )


SCHEDULE = _subject("schedule", Schedule, Timer, "schedule (or reschedule) a one-shot timer")
CANCEL = _subject("cancel", Cancel, Canceled, "cancel a timer: canceled, or too_late")
GET = _subject("get", GetTimer, Timer, "one of my timers")
LIST = _subject("list", ListTimers, TimerList, "my timers by key prefix")
RESOLUTION = _subject("resolution", ResolutionRequest, Resolution, "the measured resolution")

# Schedule definitions (`scheduler.at.…`) and the engine's due messages (`scheduler.due.…`)
# live together: a schedule's target must be in its own stream. No age limit, ever: it
# would purge pending schedules.
ENGINE = StreamSpec(
    "SCHEDULER", ("scheduler.at.>", "scheduler.due.>"), "held schedules and due messages"
)

CONTRACT = service_contract(
    "scheduler",
    [SCHEDULE, CANCEL, GET, LIST, RESOLUTION],
    buckets=("scheduler-timers",),
    streams=(ENGINE, TIMERS),
    timer_targets=("probe",),  # its own probes, which measure the resolution at start
)
