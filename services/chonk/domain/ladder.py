"""The chaser's ladder (§3.3): policy, not prompt. Each stage's wait is counted in the
tenant's business hours, in its time zone; each follow-up is a timer on the scheduler."""

from datetime import datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import msgspec

__all__ = ["STAGES", "BusinessHours", "Stage", "due"]


class Stage(msgspec.Struct, frozen=True):
    number: int
    wait_hours: float  # business hours after the stage before
    action: str
    recipient: Literal["dependency_owner", "requester_and_owner", "mor"]


STAGES = (
    Stage(0, 0, "Ask, with context and the specific request", "dependency_owner"),
    Stage(1, 4, "Follow up once, shorter; offer to reprioritize", "dependency_owner"),
    Stage(2, 8, "Inform the requester; propose an alternative", "requester_and_owner"),
    Stage(3, 0, "Escalate to the owner's MoR with receipts; no more to the owner", "mor"),
)


class BusinessHours(msgspec.Struct, frozen=True):
    zone: str
    opens: time = time(9)
    closes: time = time(17)
    weekdays: frozenset[int] = frozenset(range(5))  # Monday is 0


def due(after: datetime, hours: float, tenant: BusinessHours) -> datetime:
    """`hours` of the tenant's business hours after `after` (UTC in, UTC out). A day of
    eight business hours is §3.3's "1 business day"."""
    zone = ZoneInfo(tenant.zone)
    at = after.astimezone(zone)
    left = timedelta(hours=hours)
    while True:
        day_open = at.replace(
            hour=tenant.opens.hour, minute=tenant.opens.minute, second=0, microsecond=0
        )
        day_close = at.replace(
            hour=tenant.closes.hour, minute=tenant.closes.minute, second=0, microsecond=0
        )
        if at.weekday() not in tenant.weekdays or at >= day_close:
            at = (at + timedelta(days=1)).replace(
                hour=tenant.opens.hour, minute=0, second=0, microsecond=0
            )
            continue
        at = max(at, day_open)
        if at + left <= day_close:
            return (at + left).astimezone(after.tzinfo)
        left -= day_close - at
        at = day_close
