"""Windows: which are offered, and the life of one pending send (hip-0524 §5, §9).

A window is `open` until its end or the person's act. At its end it goes (`sending`, then
`sent` once the room has it, or `failed` when every try to deliver it failed) or, below
send, is `canceled`; the person may instead have `edited`, `replaced` or `stopped` it (an
edited or replaced one then has the seq of the person's own message), and their own answer
written in the room meanwhile replaces it at its end. A window `sending`
when its replica died goes again at the next try of its end: the delivery's key stores it
once. Every function here returns the window as it is after the event, the same window when
the event changes nothing.
"""

from datetime import datetime, timedelta
from typing import Literal

import msgspec

from libs.contracts.ladder import WINDOW_SECONDS, PendingWindow, Window, WindowOption
from libs.contracts.problem import Refused
from libs.contracts.rooms import TEXT_MOST, fitted

__all__ = [
    "MOVES",
    "SECONDS",
    "UNSENT",
    "delivered",
    "ended",
    "failed",
    "lowered",
    "notice",
    "offered",
    "own_sent",
    "seconds_left",
    "statement",
    "taken_over",
]

SECONDS = WINDOW_SECONDS

# The only moves a window makes; every other state is settled.
MOVES: dict[str, frozenset[str]] = {
    "open": frozenset({"sending", "canceled", "edited", "replaced", "stopped", "failed"}),
    "sending": frozenset({"sent", "failed"}),
}

# The settled states in which the agent's send did not leave.
UNSENT = frozenset({"canceled", "edited", "replaced", "stopped", "failed"})

Act = Literal["edited", "replaced", "stopped"]


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


def seconds_left(window: PendingWindow, now: datetime) -> PendingWindow:
    left = max(0.0, (window.due_at - now) / timedelta(seconds=1))
    return msgspec.structs.replace(window, seconds_left=round(left, 3))


def ended(window: PendingWindow, level: str, own: int | None = None) -> PendingWindow:
    """The window's end (§9: the level is read again): at send an open window goes, below
    send it is canceled; one already `sending` goes again. One the person has answered
    themself meanwhile (`own`, their message) is `replaced` by their words: their agent's
    would be a second answer, after theirs."""
    if window.state != "open":
        return window
    if level != "send":
        return _move(window, "canceled")
    return _move(window, "sending") if own is None else _move(window, "replaced", own)


def lowered(window: PendingWindow, level: str) -> PendingWindow:
    """The level was lowered (or a ceiling set): an open window no longer at send is
    canceled at once."""
    if window.state != "open" or level == "send":
        return window
    return _move(window, "canceled")


def delivered(window: PendingWindow, sent_seq: int) -> PendingWindow:
    """The room stored the window's message as `sent_seq`."""
    if window.state != "sending":
        return window
    return _move(window, "sent", sent_seq)


def failed(window: PendingWindow) -> PendingWindow:
    """Every try to deliver the window failed: nothing was sent."""
    if window.state not in MOVES:
        return window
    return _move(window, "failed")


def taken_over(window: PendingWindow | None, act: Act, window_id: str) -> PendingWindow:
    """The person edits, replaces or stops their agent's send; only an open window can be
    taken over."""
    if window is None:
        raise Refused("window-not-found", 404, f"you have no pending send {window_id}")
    if window.state != "open":
        raise Refused("window-closed", 409, f"{window_id} was {window.state}")
    return _move(window, act)


def own_sent(window: PendingWindow, seq: int) -> PendingWindow:
    """The person's own text, which took the place of an edited or replaced send, is stored
    in the room as `seq`."""
    if window.state not in ("edited", "replaced") or window.sent_seq is not None:
        return window
    return msgspec.structs.replace(window, sent_seq=seq)


def _move(window: PendingWindow, state: str, sent_seq: int | None = None) -> PendingWindow:
    assert state in MOVES.get(window.state, ()), f"{window.state} → {state}"
    return msgspec.structs.replace(window, state=state, sent_seq=sent_seq)


def notice(window: Window, reply: str) -> str:
    """What the person is told first (§5): the reply, after the words that say when it
    goes. Quoted whole where a message holds both, else cut with an ellipsis: the window
    holds the reply whole, and sends it whole."""
    head = f"In {window} I will send this for you unless you edit, replace or stop it:\n\n"
    return head + fitted(reply, TEXT_MOST - len(head))
