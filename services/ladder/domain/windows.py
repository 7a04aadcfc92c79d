"""Windows: which are offered, and the life of one pending send (hip-0524 §5, §9)."""

from datetime import datetime, timedelta
from typing import Literal

import msgspec

from libs.contracts.ladder import PendingWindow, Window, WindowOption

__all__ = ["SECONDS", "End", "at_end", "close", "offered", "seconds_left", "statement"]

SECONDS: dict[str, int] = {"instant": 0, "1m": 60, "5m": 300, "15m": 900, "1h": 3600}


def statement(window: Window) -> str:
    if window == "instant":
        return "No window: the message goes at once, and nothing protects you from it."
    return f"You are told first, then have {window} to edit, replace or stop it."


def offered(resolution_ms: float) -> list[WindowOption]:
    """Every window longer than the timer engine's measured resolution (a shorter one
    would be a lie), and `instant`, which claims no window at all."""
    return [
        WindowOption(window=w, seconds=s, statement=statement(w))  # type: ignore[arg-type]
        for w, s in SECONDS.items()
        if s == 0 or s * 1000 > resolution_ms
    ]


def close(window: PendingWindow, state: str, sent_seq: int | None = None) -> PendingWindow:
    return msgspec.structs.replace(window, state=state, sent_seq=sent_seq)


def seconds_left(window: PendingWindow, now: datetime) -> PendingWindow:
    left = max(0.0, (window.due_at - now) / timedelta(seconds=1))
    return msgspec.structs.replace(window, seconds_left=round(left, 3))


End = Literal["send", "cancel", "nothing"]


def at_end(window: PendingWindow, level: str) -> End:
    """What a window's end does (§9: the level is read again): at send an open window goes,
    below send it is canceled; one already `sending` (its delivery failed or its replica
    died) goes again, the delivery's key storing it once; any other state is the person's
    act or a settled end, and nothing happens."""
    if window.state == "sending":
        return "send"
    if window.state != "open":
        return "nothing"
    return "send" if level == "send" else "cancel"
