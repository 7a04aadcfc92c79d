"""Working hours `{"start": "HH:MM", "end": "HH:MM", "days": [...]}` (V27, C22)."""

import re
from datetime import datetime
from typing import Any

import msgspec

__all__ = ["Window", "inside", "window", "within"]

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HHMM = re.compile(r"^([01]\d|2[0-4]):([0-5]\d)$")


class Window(msgspec.Struct, frozen=True):
    """Minutes of the day; `end` may be 1440 (24:00); `days` None means every day."""

    start: int
    end: int
    days: tuple[str, ...] | None

    @property
    def wraps(self) -> bool:
        return self.start > self.end


def window(hours: Any) -> Window | None:
    """The window `hours` describes, or None if it is unreadable."""
    if not isinstance(hours, dict):
        return None
    start, end = _minutes(hours.get("start")), _minutes(hours.get("end"))
    days = hours.get("days")
    if start is None or end is None or start >= 24 * 60:
        return None
    if days is None:
        return Window(start, end, None)
    if not isinstance(days, list) or not all(isinstance(d, str) and d in DAYS for d in days):
        return None
    return Window(start, end, tuple(days))


def inside(w: Window, now: datetime) -> bool:
    """`start` inclusive, `end` exclusive, wrapping past midnight when start > end."""
    if w.days is not None and DAYS[now.weekday()] not in w.days:
        return False
    t = now.hour * 60 + now.minute + (now.second + now.microsecond / 1e6) / 60
    if w.start < w.end:
        return w.start <= t < w.end
    if w.start > w.end:
        return t >= w.start or t < w.end
    return False


def within(child: Any, parent: Any) -> bool:
    """C22: the child's hours are the parent's, or inside them."""
    if child == parent:
        return True
    c, p = window(child), window(parent)
    if c is None or p is None:
        return False
    if not set(c.days or DAYS) <= set(p.days or DAYS):
        return False
    if c.wraps or p.wraps:
        return (c.start, c.end) == (p.start, p.end)
    return c.start >= p.start and c.end <= p.end


def _minutes(value: Any) -> int | None:
    match = _HHMM.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    hours, minutes = int(match[1]), int(match[2])
    total = hours * 60 + minutes
    return total if total <= 24 * 60 else None
