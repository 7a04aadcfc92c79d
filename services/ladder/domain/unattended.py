"""The amplification ceiling (hip-0524 §5): "an agent replying on a timer across a
connected transport is cheap fan-out with a customer's credential on the far end", which
HIP-1063 §7 bounds. The agent's replies that leave by a line's room unattended (sent at
once, or at a window's end) are at most MOST in any hour; past it a reply is asked as a
confirmation, so an agent answering an auto-responder or an out-of-office (which answer
every message) stops at its person instead of texting without end. A room of no line
needs none: what agents and bots write there is answered by no agent."""

from datetime import datetime, timedelta

import msgspec

from libs.contracts.ladder import Decided

__all__ = [
    "HOUR",
    "MOST",
    "QUESTION",
    "Unattended",
    "admits",
    "asked_instead",
    "counted",
    "released",
]

HOUR = timedelta(hours=1)
MOST = 10
QUESTION = (
    f"Your agent has sent {MOST} replies here without you in the last hour, so it asks "
    "before this one. Pick it, edit it, or decline."
)


class Unattended(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The replies a person's agent sent one room unattended within the hour: each reply's
    key, and when it was let go."""

    sent: dict[str, datetime] = {}


def counted(before: Unattended, reply: str, now: datetime) -> Unattended:
    """The room's last hour, with `reply` in it if it fits (or was counted before: a reply
    routed again is the same reply)."""
    recent = {key: at for key, at in before.sent.items() if now - at < HOUR}
    if reply not in recent and len(recent) < MOST:
        recent[reply] = now
    return Unattended(sent=recent)


def released(before: Unattended, reply: str) -> Unattended:
    """The hour without `reply`: counted when its window opened (or as it was routed to be
    sent at once), it did not leave unattended after all (the person stopped, edited or
    replaced it, answered first, or it closed below send)."""
    return Unattended(sent={key: at for key, at in before.sent.items() if key != reply})


def admits(hour: Unattended, reply: str) -> bool:
    return reply in hour.sent


def asked_instead(decided: Decided) -> Decided:
    return Decided(
        level=decided.level,
        action="confirm",
        window=None,
        reason=f"{MOST} replies went to this room unattended within the hour: asked, not sent",
    )
