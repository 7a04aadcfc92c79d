"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers that the key is not there. A timer just scheduled is read, and
canceled, from another node at once: a cancel decided on a replica behind found no timer,
changed nothing, and the timer fired anyway (its owner then had to see it was stopped)."""

from datetime import UTC, datetime

import msgspec

from libs.contracts.scheduler import Timer
from services.scheduler.store import open_store
from tests.support import asked_again

TIMERS = 3000  # a replica behind missed none of the first 2,000 reads in some runs


async def test_a_timer_read_as_soon_as_it_is_scheduled_is_found_and_canceled(two_nodes):
    writer, other = two_nodes
    timers, _ = await open_store(writer.jetstream(), replicas=3)
    elsewhere, _ = await open_store(other.jetstream(), replicas=3)
    missed = []
    for i in range(TIMERS):
        timer = _pending(f"w-{i}")
        await asked_again(timers.change, "ladder", timer.key, lambda _, t=timer: t)
        if await asked_again(elsewhere.get, "ladder", timer.key) != timer:
            missed.append(("get", i))
        before, after = await asked_again(elsewhere.change, "ladder", timer.key, _canceled)
        if before != timer or after is None or after.state != "canceled":
            missed.append(("cancel", i))
    assert missed == []
    listed = await asked_again(elsewhere.of_owner, "ladder", "w-")
    assert len(listed) == TIMERS and {t.state for t in listed} == {"canceled"}


def _pending(key: str) -> Timer:
    at = datetime(2026, 12, 3, tzinfo=UTC)
    return Timer(
        owner="ladder",
        key=key,
        due_at=at,
        target="window-end",
        state="pending",
        id=f"t-{key}",
        scheduled_at=at,
    )


def _canceled(timer: Timer | None) -> Timer | None:
    return None if timer is None else msgspec.structs.replace(timer, state="canceled")
