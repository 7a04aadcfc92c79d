"""The runtime meter: each run billed per started second at the catalog's one rate."""

import math
from decimal import ROUND_HALF_UP, Decimal

import msgspec

from libs.contracts.agents import AgentKind, RunEnded

__all__ = ["AgentMeter", "MeterMonth", "amount", "billed_seconds", "month_of", "record"]


class AgentMeter(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: AgentKind
    user: str | None
    runs: int = 0
    seconds: int = 0


class MeterMonth(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An org's month. `last_seq` is the last METER message counted, so a redelivered one
    is not counted twice (the meter reads in order, one at a time)."""

    month: str
    agents: dict[str, AgentMeter] = {}
    last_seq: int = 0


def month_of(run: RunEnded) -> str:
    return run.ended_at.strftime("%Y-%m")


def billed_seconds(run: RunEnded) -> int:
    """Whole seconds, each started second billed; a run never bills less than one."""
    elapsed = (run.ended_at - run.started_at).total_seconds()
    return max(1, math.ceil(elapsed))


def record(month: MeterMonth, run: RunEnded, seq: int) -> MeterMonth:
    if seq <= month.last_seq:
        return month
    before = month.agents.get(run.agent) or AgentMeter(kind=run.kind, user=run.user)
    after = msgspec.structs.replace(
        before, runs=before.runs + 1, seconds=before.seconds + billed_seconds(run)
    )
    return MeterMonth(month=month.month, agents=month.agents | {run.agent: after}, last_seq=seq)


def amount(seconds: int, rate_per_hour: Decimal) -> Decimal:
    """USD for `seconds` at `rate_per_hour`, to a millionth of a dollar."""
    return (rate_per_hour * seconds / 3600).quantize(Decimal("0.000001"), ROUND_HALF_UP)
