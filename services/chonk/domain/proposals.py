"""How long a PROPOSE_CONFIRM waits for its decider. The spec names no period; a proposal
is made on what the Chonk's sources said when it ran (§5's receipts, each as of its
snapshot), so a yes given weeks on would carry out a message or a chase for a state long
past. Its question closes after OPEN_FOR: a yes after it is refused by the room, and the
proposal lapses, nothing carried out."""

from datetime import datetime, timedelta

__all__ = ["OPEN_FOR", "opening"]

OPEN_FOR = timedelta(days=3)  # a weekend and a day


def opening(before: datetime | None, now: datetime) -> datetime:
    """When a proposal's question opens: when it first opened, while it is open (a run
    made again asks the same question, which closes when it first said), else now."""
    if before is not None and now < before + OPEN_FOR:
        return before
    return now
