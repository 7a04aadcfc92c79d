"""The spend ledger: what a grant and everything delegated from it spent this month.

One value per root grant and month holds every grant of its tree apart, so an act is
charged to its whole chain, leaf to root, in one write: siblings together can never pass
an ancestor's monthly, daily or per-act limit.
"""

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

import msgspec

from libs.contracts.problem import KeyReused
from services.poa.domain.asks import money_rule
from services.poa.domain.decisions import ALLOW, Decision, ask
from services.poa.domain.reading import is_official, items, money, obj, sum_of
from services.poa.domain.resolve import Act
from services.poa.domain.verify import verify

__all__ = [
    "Keyed",
    "Ledger",
    "RootLedger",
    "acted",
    "answered",
    "approved",
    "charge",
    "decided",
    "month_of",
    "replayed",
    "state",
]


class Ledger(msgspec.Struct, frozen=True, kw_only=True):
    """USD charged to one grant in `month` (YYYY-MM, UTC), by it or any descendant, the
    acts allowed on it, and official acts charged to it on each UTC day."""

    month: str
    spent_usd: Decimal = Decimal(0)
    acts: int = 0
    binding_by_day: dict[str, int] = {}

    def binding_on(self, now: datetime) -> int:
        return self.binding_by_day.get(now.date().isoformat(), 0)


# A tree's latest keyed decisions are kept in its ledger, in the same compare-and-set as
# their charge; one the ledger lets go is kept a day apart (poa-acts) before the write that
# drops it (`evicted`), so an act sent again is found in one or the other.
KEYS_KEPT = 32


class Keyed(NamedTuple):
    """A keyed act's decision, and the digest of the request that made it: the same key
    sent with another request is refused, never answered with this decision."""

    request: bytes
    decision: Decision


class RootLedger(msgspec.Struct, frozen=True, kw_only=True):
    """The month's ledgers of a root grant's whole tree, by grant id; the asks whose
    approved acts were charged to it (so an approval carried out twice charges once); and
    the decisions of its latest keyed acts, by request key (so an act sent again after its
    answer was lost is answered, not charged, again)."""

    month: str
    grants: dict[str, Ledger] = {}
    approved: tuple[str, ...] = ()
    # A bare Decision was kept before the request's digest was: it answers its key.
    keyed: dict[str, Keyed | Decision] = {}

    def of(self, grant_id: str) -> Ledger:
        return self.grants.get(grant_id) or Ledger(month=self.month)


def month_of(now: datetime) -> str:
    return now.strftime("%Y-%m")


def month_before(now: datetime, within: timedelta) -> str | None:
    """Last month, if it ended less than `within` ago: an act keyed that recently may have
    been charged to its books."""
    earlier = month_of(now - within)
    return None if earlier == month_of(now) else earlier


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


def charge(
    books: RootLedger, chain: list[str], envelope: dict[str, Any], now: datetime, *, official: bool
) -> RootLedger:
    """The ledgers after an allowed act, charged to every grant of `chain` (root to leaf).

    A negative amount never lowers what was spent: a refund is not a new allowance.
    """
    arguments = obj(obj(envelope.get("invocation")).get("arguments"))
    amount = money(arguments.get("amount"))
    paid = amount if amount is not None and amount > 0 and arguments.get("currency") == "USD" else 0
    day = now.date().isoformat()
    grants = dict(books.grants)
    for grant_id in chain:
        before = books.of(grant_id)
        binding = dict(before.binding_by_day)
        if official:
            binding[day] = binding.get(day, 0) + 1
        grants[grant_id] = Ledger(
            month=books.month,
            spent_usd=sum_of(before.spent_usd, paid),
            acts=before.acts + 1,
            binding_by_day=binding,
        )
    return msgspec.structs.replace(books, grants=grants)


def decided(
    chain: list[tuple[str, dict[str, Any]]],
    envelope: dict[str, Any],
    books: RootLedger,
    now: datetime,
    *,
    revoked: bool,
) -> Decision:
    """An act on the last grant of `chain` (`(id, grant)`, root to leaf), decided on its own
    ledger; one it allows is asked instead if it would take any ancestor past a limit with
    everything already charged to that ancestor (V31, V33, V34 read on the ancestor's own
    ledger)."""
    *ancestors, (grant_id, grant) = chain
    own = state(books.of(grant_id), now, revoked=revoked)
    decision = verify(grant, [g for _, g in ancestors], envelope, own)
    if decision.decision != ALLOW:
        return decision
    invocation = obj(envelope.get("invocation"))
    official = decision.rule_id == "standing_within_limits"
    for ancestor_id, ancestor in ancestors:
        authority = next(
            (
                a
                for a in map(obj, items(ancestor.get("authorities")))
                if a.get("act_id") == decision.act_id
            ),
            {},
        )
        act = Act(authority, decision.act_id, "", 0, official and is_official(authority), None)
        rule = money_rule(
            ancestor, act, invocation, state(books.of(ancestor_id), now, revoked=False)
        )
        if rule is not None:
            return ask(rule, decision.act_id)
    return decision


def evicted(before: RootLedger, after: RootLedger) -> dict[str, Keyed | Decision]:
    """The keyed decisions a change pushes out of the ledger, to be kept elsewhere first."""
    return {k: d for k, d in before.keyed.items() if k not in after.keyed}


def answered(kept: Keyed | Decision | None, request: bytes) -> Decision | None:
    """The decision `kept` under a key, if `request` (its digest) is the one that made it."""
    if not isinstance(kept, Keyed):
        return kept
    if kept.request != request:
        raise KeyReused()
    return kept.decision


def replayed(books: RootLedger, key: str | None, request: bytes) -> Decision | None:
    """The decision of the act charged under request `key`, if one was."""
    return None if key is None else answered(books.keyed.get(key), request)


def acted(
    books: RootLedger,
    decision: Decision,
    chain: list[str],
    envelope: dict[str, Any],
    now: datetime,
    *,
    key: str | None = None,
    request: bytes = b"",
) -> RootLedger:
    """The books after an act decided on them: charged to the whole chain (root to leaf) if
    allowed, as they were if not, or if the act keyed `key` was charged already."""
    if decision.decision != ALLOW or replayed(books, key, request) is not None:
        return books
    official = decision.rule_id == "standing_within_limits"
    after = charge(books, chain, envelope, now, official=official)
    if key is None:
        return after
    kept = list(books.keyed.items())[max(0, len(books.keyed) - KEYS_KEPT + 1) :]
    return msgspec.structs.replace(after, keyed=dict([*kept, (key, Keyed(request, decision))]))


def approved(
    books: RootLedger,
    ask_id: str,
    decision: Decision,
    chain: list[str],
    envelope: dict[str, Any],
    now: datetime,
    *,
    official: bool,
) -> RootLedger:
    """The books after the person approved ask `ask_id` and the act was decided `decision`
    on them: charged once if allowed."""
    if ask_id in books.approved or decision.decision != ALLOW:
        return books
    after = charge(books, chain, envelope, now, official=official)
    return msgspec.structs.replace(after, approved=(*books.approved, ask_id))
