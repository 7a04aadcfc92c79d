"""The rules of a timer, without any server."""

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.scheduler import MAX_PAYLOAD, Schedule, Timer
from services.scheduler import domain

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DUE = NOW + timedelta(minutes=5)


def _request(**changes: object) -> Schedule:
    base = Schedule(key="window.acme.1", due_at=DUE, target="window-end", payload={"n": 1})
    return msgspec.structs.replace(base, **changes)


def _pending() -> Timer:
    return domain.scheduled(_request(), "ladder", ("window-end",), now=NOW, timer_id="t1")


def _refusal(**changes: object) -> tuple[int, str]:
    with pytest.raises(Refused) as caught:
        domain.scheduled(_request(**changes), "ladder", ("window-end",), now=NOW, timer_id="x")
    return caught.value.problem.status, caught.value.problem.rule


def test_a_scheduled_timer_is_pending_with_its_id():
    timer = _pending()
    assert (timer.state, timer.id, timer.owner, timer.due_at) == ("pending", "t1", "ladder", DUE)


def test_it_is_armed_early_so_the_fire_path_can_hold_to_the_exact_time():
    assert domain.armed_at(_pending()) == DUE - timedelta(milliseconds=300)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"due_at": NOW - timedelta(seconds=1)}, (422, "due-in-past")),
        ({"due_at": NOW}, (422, "due-in-past")),
        ({"target": "somewhere"}, (422, "unknown-target")),
        ({"payload": "x" * MAX_PAYLOAD}, (413, "payload-too-large")),
    ],
    ids=lambda v: str(v),
)
def test_bad_requests_are_refused_by_rule(changes, expected):
    assert _refusal(**changes) == expected


def test_a_due_time_without_an_offset_cannot_even_be_decoded():
    """It names no instant: before, it was decoded and refused by the domain, whose rule a
    service in another language could not find in the JSON Schema (now `date-time`)."""
    body = b'{"key": "k", "due_at": "2026-12-01T12:00:00", "target": "t"}'
    with pytest.raises(msgspec.ValidationError, match=r"timezone component - at `\$.due_at`"):
        msgspec.json.decode(body, type=Schedule)


def test_a_malformed_key_cannot_even_be_decoded():
    body = b'{"key": "no spaces here", "due_at": "2026-12-01T00:00:00Z", "target": "t"}'
    with pytest.raises(msgspec.ValidationError, match=r"\$.key"):
        msgspec.json.decode(body, type=Schedule)


def test_only_a_service_owns_timers():
    assert domain.owner_of(Principal(org="acme", sub="service:ladder")) == "ladder"
    with pytest.raises(Refused):
        domain.owner_of(Principal(org="acme", sub="acme/ada"))


def test_canceling_a_pending_timer_cancels_it():
    canceled, outcome = domain.cancel(_pending())
    assert (canceled.state, outcome) == ("canceled", "canceled")


def test_canceling_a_fired_timer_is_too_late_and_changes_nothing():
    fired = domain.fire(_pending(), "t1", now=DUE)
    assert domain.cancel(fired) == (None, "too_late")


def test_firing_records_how_late_it_was():
    fired = domain.fire(_pending(), "t1", now=DUE + timedelta(milliseconds=12.5))
    assert (fired.state, fired.fired_at, fired.late_ms) == (
        "fired", DUE + timedelta(milliseconds=12.5), 12.5
    )  # fmt: skip


def test_the_loser_of_the_race_does_nothing():
    canceled, _ = domain.cancel(_pending())
    fired = domain.fire(_pending(), "t1", now=DUE)
    assert domain.fire(canceled, "t1", now=DUE) is None
    assert domain.fire(fired, "t1", now=DUE) is None
    assert domain.cancel(fired)[0] is None


def test_a_replaced_schedule_does_not_fire():
    assert domain.fire(_pending(), "an-older-id", now=DUE) is None
