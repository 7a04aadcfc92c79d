"""The runtime meter: each run billed per started second at the catalog's one rate."""

import math
from decimal import ROUND_HALF_UP, Decimal

import msgspec

from libs.contracts.agents import AgentKind, RunEnded

__all__ = ["AgentMeter", "amount", "billed_seconds", "month_of", "record"]


class AgentMeter(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One agent's month in one org. `last_seq` is the last METER message counted for it,
    so a redelivered one is not counted twice (the meter reads in order, one at a time).
    Each agent is kept apart: an org's month held whole was rewritten at every run (9.5
    ms at 10,000 agents, on the one reader every org's runs wait for), and past some
    20,000 agents it no longer fit in a message of the bus."""

    agent: str
    kind: AgentKind
    user: str | None
    runs: int = 0
    seconds: int = 0
    last_seq: int = 0


def month_of(run: RunEnded) -> str:
    return run.ended_at.strftime("%Y-%m")


def billed_seconds(run: RunEnded) -> int:
    """Whole seconds, each started second billed; a run never bills less than one."""
    elapsed = (run.ended_at - run.started_at).total_seconds()
    return max(1, math.ceil(elapsed))


def record(meter: AgentMeter | None, run: RunEnded, seq: int) -> AgentMeter:
    """The run's agent's month with the run counted, once."""
    before = meter or AgentMeter(agent=run.agent, kind=run.kind, user=run.user)
    if seq <= before.last_seq:
        return before
    return msgspec.structs.replace(
        before, runs=before.runs + 1, seconds=before.seconds + billed_seconds(run), last_seq=seq
    )


def amount(seconds: int, rate_per_hour: Decimal) -> Decimal:
    """USD for `seconds` at `rate_per_hour`, to a millionth of a dollar."""
    return (rate_per_hour * seconds / 3600).quantize(Decimal("0.000001"), ROUND_HALF_UP)
