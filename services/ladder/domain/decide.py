"""The decision for one reply of a person's agent (hip-0524 §4, §8, §10, §11)."""

from libs.contracts.ladder import Decided, Level, Window

__all__ = ["decide"]


def decide(level: Level, window: Window, *, first_contact: bool, synchronous: bool) -> Decided:
    """`level` is already effective (resolved, then the ceiling).

    A live call has no window: the agent speaks only at send, and confirm is never shortened
    into one. A first contact is never automatic at any level: the human-first rule is
    stricter than send, so the person is asked.
    """
    if synchronous:
        if level == "send" and not first_contact:
            return Decided(
                level=level,
                action="send",
                window="instant",
                reason="send, on a live call: no window to wait",
            )
        return Decided(
            level=level,
            action="silent",
            window=None,
            reason="a live call cannot wait for the person: the agent does not speak",
        )
    if level == "send" and first_contact:
        return Decided(
            level=level,
            action="confirm",
            window=None,
            reason="first contact is answered by a person: asked, not sent",
        )
    if level == "send":
        return Decided(
            level=level,
            action="send",
            window=window,
            reason="send: announced, then sent unless the person intervenes",
        )
    if level == "confirm":
        return Decided(
            level=level,
            action="confirm",
            window=None,
            reason="confirm: the person picks, edits or declines",
        )
    return Decided(level=level, action="draft", window=None, reason="draft: the person sends it")
