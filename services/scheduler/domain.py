"""The rules of a timer: who owns it, when it may be scheduled, and the one transition out
of pending (to fired or to canceled) that decides every race. Pure: the time is passed in."""

from datetime import datetime, timedelta

import msgspec

from libs.contracts import codec
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.scheduler import MAX_PAYLOAD, Fired, Schedule, Timer

__all__ = ["ARM_EARLY", "armed_at", "cancel", "delivery", "fire", "owner_of", "scheduled"]

# The engine fires a held message 0-250 ms after its time. It is armed this much earlier and
# the fire path holds the rest, so a timer is delivered at its due time, not a tick later.
ARM_EARLY = timedelta(milliseconds=300)


def owner_of(principal: Principal) -> str:
    kind, _, name = principal.sub.partition(":")
    if kind != "service" or not name:
        raise Refused("not-a-service", 403, "timers are owned by services (sub service:<name>)")
    return name


def scheduled(
    request: Schedule, owner: str, targets: tuple[str, ...], *, now: datetime, timer_id: str
) -> Timer:
    """A pending timer, or a refusal naming what is wrong with the request."""
    if request.due_at <= now:
        raise Refused("due-in-past", 422, f"due_at {request.due_at.isoformat()} has passed")
    if request.target not in targets:
        raise Refused(
            "unknown-target", 422, f"{owner} has no timer target {request.target!r}; "
            f"its targets: {list(targets)}"
        )  # fmt: skip
    size = len(codec.encode(request.payload))
    if size > MAX_PAYLOAD:
        raise Refused("payload-too-large", 413, f"payload is {size} bytes; at most {MAX_PAYLOAD}")
    return Timer(
        owner=owner,
        key=request.key,
        due_at=request.due_at,
        target=request.target,
        state="pending",
        id=timer_id,
        scheduled_at=now,
        payload=request.payload,
    )


def armed_at(timer: Timer) -> datetime:
    return timer.due_at - ARM_EARLY


def cancel(timer: Timer) -> tuple[Timer | None, str]:
    """(the timer to store, or None to store nothing; the answer)."""
    match timer.state:
        case "pending":
            return msgspec.structs.replace(timer, state="canceled"), "canceled"
        case "canceled":
            return None, "canceled"
        case _:
            return None, "too_late"


def fire(timer: Timer, timer_id: str, *, now: datetime) -> Timer | None:
    """The fired timer, or None: a canceled timer, a replaced one (another id), or one that
    fired already does nothing."""
    if timer.state != "pending" or timer.id != timer_id:
        return None
    late = (now - timer.due_at).total_seconds() * 1000
    return msgspec.structs.replace(timer, state="fired", fired_at=now, late_ms=round(late, 3))


def delivery(timer: Timer) -> Fired:
    assert timer.fired_at is not None and timer.late_ms is not None
    return Fired(
        owner=timer.owner,
        key=timer.key,
        target=timer.target,
        due_at=timer.due_at,
        fired_at=timer.fired_at,
        late_ms=timer.late_ms,
        payload=timer.payload,
    )
