"""The spend ledger of one grant for one month, and the state verification reads from it."""

from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec

from services.poa.domain.reading import money, obj

__all__ = ["Ledger", "month_of", "reserve", "state"]


class Ledger(msgspec.Struct, frozen=True, kw_only=True):
    """USD spent in `month` (YYYY-MM, UTC) and official acts made on each UTC day."""

    month: str
    spent_usd: Decimal = Decimal(0)
    binding_by_day: dict[str, int] = {}

    def binding_on(self, now: datetime) -> int:
        return self.binding_by_day.get(now.date().isoformat(), 0)


def month_of(now: datetime) -> str:
    return now.strftime("%Y-%m")


def state(ledger: Ledger, now: datetime, *, revoked: bool) -> dict[str, Any]:
    """The verifier's `state` (poa-verifier §2.3): grants come from the store, so no carrier
    mode; no contacts source exists yet, so no counterparty counts as known."""
    return {
        "now": now.replace(tzinfo=None).isoformat(timespec="seconds"),
        "revoked": revoked,
        "spent_month_usd": ledger.spent_usd,
        "binding_acts_today": ledger.binding_on(now),
        "known_counterparties": [],
    }


def reserve(ledger: Ledger, envelope: dict[str, Any], now: datetime, *, official: bool) -> Ledger:
    """The ledger after an allowed act: its USD amount spent, one more official act today.

    A negative amount never lowers what was spent: a refund is not a new allowance.
    """
    arguments = obj(obj(envelope.get("invocation")).get("arguments"))
    amount = money(arguments.get("amount"))
    spent = ledger.spent_usd
    if amount is not None and amount > 0 and arguments.get("currency") == "USD":
        spent += amount
    binding = dict(ledger.binding_by_day)
    if official:
        day = now.date().isoformat()
        binding[day] = binding.get(day, 0) + 1
    return Ledger(month=ledger.month, spent_usd=spent, binding_by_day=binding)
