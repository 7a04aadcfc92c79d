"""How long the shared streams keep what they hold. EVENTS keeps an event a week: before, it
kept every event ever published, one for each message stored, and a reader made later read
them all. A stream made by a version before its age limit gets the limit when a service of
this version starts, keeping what it holds."""

import uuid

from libs.contracts import streams
from libs.runtime.service import ensure_shared_streams, ensure_stream

WEEK = 7 * 24 * 3600


async def test_events_and_fired_timers_are_kept_a_week(operator):
    js = operator.jetstream()
    await ensure_shared_streams(js, ("EVENTS", "TIMERS"))
    for name in ("EVENTS", "TIMERS"):
        assert (await js.stream_info(name)).config.max_age == WEEK, name


async def test_a_dead_letter_parked_again_within_a_day_is_taken_once(operator):
    js = operator.jetstream()
    await ensure_shared_streams(js, ("DEAD",))
    assert (await js.stream_info("DEAD")).config.duplicate_window == 24 * 3600


async def test_a_stream_made_without_an_age_limit_gets_one_and_keeps_what_it_holds(operator):
    js, name = operator.jetstream(), f"KEPT_{uuid.uuid4().hex[:8]}"
    subject = f"kept.{name}"
    await js.add_stream(name=name, subjects=[subject])  # as an earlier version made it
    await js.publish(subject, b"held")
    spec = streams.StreamSpec(name, (subject,), "a stream with an age limit", max_age_s=WEEK)
    try:
        await ensure_stream(js, spec, replicas=1)
        info = await js.stream_info(name)
        assert (info.config.max_age, info.state.messages) == (WEEK, 1)
    finally:
        await js.delete_stream(name)
