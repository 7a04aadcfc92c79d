"""The chaser's ladder (§3.3): policy, not prompt. Each stage's wait is counted in the
tenant's business hours, in its time zone; each stage after the first ask is a timer on the
scheduler, and what it says is fixed here but for stage 1's words, which the chaser
proposed. An answer from anyone it asked ends the chase."""

from datetime import date, datetime, time, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

import msgspec

from services.chonk.domain import zones

__all__ = [
    "REPLIES",
    "STAGES",
    "BusinessHours",
    "Chase",
    "Said",
    "Stage",
    "due",
    "said",
    "stage_due",
]


class Stage(msgspec.Struct, frozen=True):
    number: int
    wait: float  # after the stage before, in `unit`s of the tenant's business time
    unit: Literal["hours", "days"]
    action: str
    recipient: Literal["dependency_owner", "requester_and_owner", "mor"]


class BusinessHours(msgspec.Struct, frozen=True):
    """When a tenant is open, in its zone: from `opens` to `closes` on each of `weekdays`;
    a `closes` before `opens` is the next morning (a bar open 16:00 to 02:00)."""

    zone: str
    opens: time = time(9)
    closes: time = time(17)
    weekdays: frozenset[Annotated[int, msgspec.Meta(ge=0, le=6)]] = frozenset(range(5))  # Monday 0

    def __post_init__(self) -> None:
        zones.zone(self.zone)
        # Either would never let a wait end: no open hour to count it in.
        if self.opens == self.closes:
            raise ValueError("opens and closes are the same time: the tenant is never open")
        if not self.weekdays:
            raise ValueError("weekdays is empty: the tenant is never open")

    @property
    def day(self) -> timedelta:
        """How long one of its days is open."""
        start, end = (datetime.combine(date.min, t) for t in (self.opens, self.closes))
        return (end - start) % timedelta(days=1)


STAGES = (
    Stage(0, 0, "hours", "Ask, with context and the specific request", "dependency_owner"),
    Stage(1, 4, "hours", "Follow up once, shorter; offer to reprioritize", "dependency_owner"),
    Stage(2, 1, "days", "Inform the requester; propose an alternative", "requester_and_owner"),
    # §3.3 gives stage 3 no wait of its own; the requester gets stage 1's four hours to
    # choose an alternative before the MoR is told.
    Stage(3, 4, "hours", "Escalate to the owner's MoR with receipts; no more to the owner", "mor"),
)
# What the chased person is offered at each stage; the requester, at stage 2's.
REPLIES = ("On it", "Someone else should take it")
ALTERNATIVES = ("Find another reviewer", "Defer it")


class Chase(msgspec.Struct, frozen=True, kw_only=True):
    """One chase: what waits on whom, for whom, and who is above them; the payload of each
    stage's timer, `stage` the one it takes."""

    org: str
    chonk: str
    title: str  # the Chonk's, as its bot is titled
    run: str
    item: str
    owner: str
    owner_name: str
    requester: str
    requester_name: str
    mor: str
    followup: str  # stage 1's words, as the chaser proposed them, with the receipts
    receipts: str  # the run's receipts block, for the escalation
    hours: BusinessHours  # the tenant's, in which each wait is counted
    stage: int = 1


class Said(msgspec.Struct, frozen=True):
    person: str
    text: str
    options: tuple[str, ...] = ()


def said(chase: Chase) -> tuple[Said, ...]:
    """What stage `chase.stage` says, and to whom."""
    c = chase
    match c.stage:
        case 1:
            return (Said(c.owner, c.followup, REPLIES),)
        case 2:
            return (
                Said(
                    c.requester,
                    f"{c.item} is still waiting on {c.owner_name}: asked, and followed up "
                    "once, with no answer yet. Shall I find another reviewer, or defer it?",
                    ALTERNATIVES,
                ),
                Said(
                    c.owner,
                    f"I've let {c.requester_name} know {c.item} is still waiting on you. If "
                    "someone else should take it, say so.",
                    REPLIES,
                ),
            )
        case 3:
            return (
                Said(
                    c.mor,
                    f"Escalating {c.item}: it has waited on {c.owner_name} through the chaser's "
                    f"ladder (asked, followed up once, {c.requester_name} told) with no answer. "
                    f"I won't message {c.owner_name} about it again.\n\n{c.receipts}",
                ),
            )
    raise ValueError(f"the ladder has no stage {c.stage} after the first ask")


def stage_due(after: datetime, stage: Stage, tenant: BusinessHours) -> datetime:
    """When `stage` comes, its wait counted from `after` in the tenant's business time. A
    business day is as many hours as the tenant is open in one (§3.3's "1 business day":
    the same time on the next day it opens), not a fixed eight."""
    unit = tenant.day / timedelta(hours=1) if stage.unit == "days" else 1.0
    return due(after, stage.wait * unit, tenant)


def due(after: datetime, hours: float, tenant: BusinessHours) -> datetime:
    """`hours` of the tenant's business hours after `after` (UTC in, UTC out). Each day's
    hours are its opening and closing instants in the tenant's zone; time is counted
    between instants, so a day that skips or repeats an hour within them has one hour
    fewer or more."""
    zone = ZoneInfo(tenant.zone)
    at, left = after, timedelta(hours=hours)
    overnight = timedelta(days=1 if tenant.closes <= tenant.opens else 0)
    day = after.astimezone(zone).date() - overnight  # yesterday's may be open still
    while True:
        opens = datetime.combine(day, tenant.opens, zone).astimezone(after.tzinfo)
        closes = datetime.combine(day + overnight, tenant.closes, zone).astimezone(after.tzinfo)
        open_today = day.weekday() in tenant.weekdays
        day += timedelta(days=1)
        if not open_today or at >= closes:
            continue
        at = max(at, opens)
        if at + left <= closes:
            return at + left
        left -= closes - at
        at = closes
