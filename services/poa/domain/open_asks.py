"""The asks one agent has open to its person, at most `OPEN_MOST`. Each holds a question
in their room, a timer and an envelope of up to 64 KiB until they answer it or it expires,
so an agent sending act after act that asks would otherwise put questions to them without
end. Counted per agent, so that one (a delegate the person granted) cannot fill the places
of another (their own agent). The places are listed under one key changed by
compare-and-set: acts at the same moment take the last place once.
"""

from datetime import datetime, timedelta

import msgspec

from libs.contracts.poa import AskRecord
from libs.contracts.problem import Refused
from services.poa.domain import approvals

__all__ = ["FULL", "OPEN_MOST", "Place", "held", "let_go", "spent"]

OPEN_MOST = 16
FULL = "asks-full"
# A place held for an ask that was never stored (its replica died between the two) is
# taken back once it is older than this, far longer than holding and storing take.
UNSTORED = timedelta(minutes=1)


class Place(msgspec.Struct, frozen=True, array_like=True):
    ask: str
    at: datetime


def held(places: tuple[Place, ...], ask: AskRecord, now: datetime) -> tuple[Place, ...]:
    """`places` with one for `ask`: the same act's ask keeps its own."""
    if any(p.ask == ask.id for p in places):
        return places
    if len(places) >= OPEN_MOST:
        raise Refused(
            FULL,
            409,
            f"{ask.agent} has {OPEN_MOST} asks open to {ask.person}, the most an agent may"
            " put to them: another waits until they answer one or one expires",
        )
    return (*places, Place(ask.id, now))


def let_go(places: tuple[Place, ...], ask_id: str) -> tuple[Place, ...]:
    return tuple(p for p in places if p.ask != ask_id)


def spent(place: Place, ask: AskRecord | None, now: datetime) -> bool:
    """Whether `place` holds nothing open: its ask settled or past its expiry (no answer
    can allow it, its timer late or lost), or never stored in time (a settled ask whose
    replica died before it let its place go, or one that died between holding and
    storing)."""
    if ask is None:
        return now - place.at > UNSTORED
    return ask.state != "open" or approvals.lapsed(ask, now)
