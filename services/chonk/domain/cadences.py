"""Cadences (§1's runs that come round): a tenant's run at a time of day in its own time
zone, every day or on one weekday. Each time is a timer on the scheduler; when it fires, the
run runs and the next time is timed."""

from datetime import datetime, time, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

import msgspec

from services.chonk.domain import zones

__all__ = ["Cadence", "next_at", "run_id"]


class Cadence(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    run: str  # the tenant's run this cadence starts
    at: time
    zone: str
    weekday: Annotated[int, msgspec.Meta(ge=0, le=6)] | None = None  # Monday is 0; none: daily

    def __post_init__(self) -> None:
        zones.zone(self.zone)


def next_at(cadence: Cadence, after: datetime) -> datetime:
    """The first time strictly after `after` the cadence comes round (UTC in, UTC out). A
    day that skips or repeats the hour (a change of daylight saving) keeps the wall time,
    its first. Instants are compared in UTC: two times of one zone compare by their wall
    clocks, and the hour a day repeats would put a time before `after` after it."""
    zone = ZoneInfo(cadence.zone)
    day = after.astimezone(zone).date()
    while True:
        at = datetime.combine(day, cadence.at, zone).astimezone(after.tzinfo)
        if at > after and (cadence.weekday is None or day.weekday() == cadence.weekday):
            return at
        day += timedelta(days=1)


def run_id(cadence: Cadence, run: str, due: datetime) -> str:
    """The id of `run` started by the cadence's time `due`: named by its day where the
    cadence keeps time. Each of its days comes round once there, where two in a row can
    share a UTC date: a daily 01:30 in Berlin is 00:30 UTC the Sunday summer time begins
    and 23:30 UTC that same Sunday for Monday's."""
    return f"{run}_{due.astimezone(ZoneInfo(cadence.zone)):%Y%m%d}"
