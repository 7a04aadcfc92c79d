"""Reading grant, envelope and state JSON without ever raising (poa-verifier §1.2).

The verifier judges JSON that anyone may send, so every read is total: a missing key, a
null or a value of the wrong type reads as "absent", and each rule says what absent means.
"""

from datetime import UTC, datetime, timedelta
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    Underflow,
)
from typing import Any

__all__ = [
    "SUPPORTED_VERSION",
    "count",
    "covers",
    "grant_mode",
    "identity",
    "instant",
    "is_official",
    "items",
    "money",
    "obj",
    "session_mode",
    "subset",
    "sum_of",
    "text",
]

SUPPORTED_VERSION = "1.3"

# §3 C, Mode: the ladder, strictest first.
PLAN, ASK, AUTO, FULL_AUTO = 0, 1, 2, 3
_GRANT_MODES = {"draft_only": PLAN, "ask_each_time": ASK, "within_limits": AUTO}
_SESSION_MODES = {"plan": PLAN, "ask": ASK, "auto": AUTO, "full_auto": FULL_AUTO}


def obj(value: Any) -> dict[str, Any]:
    """A JSON object, or {} for anything else."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """A JSON array, or [] for anything else (absent lists behave as empty)."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def identity(value: Any) -> str | None:
    """An actor written as a string or as an object with a string `sub` (§1.2 Identity)."""
    if isinstance(value, str):
        return value
    return text(obj(value).get("sub"))


# Money is compared exactly (§1: "100.01 is one cent over 100"), sums included, which
# Python's default context rounds to 28 digits: 760 + 40.0000000000000000000000000001 came
# to 800, within a limit of 800. Amounts are summed in a context that never rounds, and so
# read only within `PLACES` digits each side of the point, which keeps every sum short: an
# amount of 1e999999999 otherwise took as many digits to add, or overflowed the default.
PLACES = 40
_EXACT = Context(
    prec=4 * PLACES,
    Emax=MAX_EMAX,
    Emin=MIN_EMIN,
    traps=[Inexact, Overflow, Underflow, InvalidOperation, DivisionByZero],
)
_LARGEST, _FINEST = Decimal(10) ** PLACES, Decimal(1).scaleb(-PLACES)


def money(value: Any) -> Decimal | None:
    """A JSON number as an exact decimal; anything else is unreadable (None), as is a
    number with more than `PLACES` digits before or after its point.

    Decoders should hand non-integers over as Decimal (msgspec's float_hook); a float that
    arrives anyway is read from its shortest repr, which is the literal that was written.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):  # whole: only its size to check
        return Decimal(value) if -_LARGEST < value < _LARGEST else None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, float):
        number = Decimal(repr(value))
    else:
        return None
    if not number.is_finite() or not -_LARGEST < number < _LARGEST:
        return None
    return None if _EXACT.remainder(number, _FINEST) else number


def sum_of(*amounts: Decimal) -> Decimal:
    """Read amounts added exactly. A ledger's total, their sum, needs a few digits more than
    2 * PLACES however many acts it counts, well within the context's."""
    total = Decimal(0)
    for amount in amounts:
        total = _EXACT.add(total, amount)
    return total


def count(value: Any) -> int | None:
    """A whole number, for counters and caps; anything else is unreadable."""
    number = money(value)
    if number is None or number != number.to_integral_value():
        return None
    try:
        return int(number)
    except (InvalidOperation, OverflowError):
        return None


def instant(value: Any) -> datetime | None:
    """An ISO-8601 date or date-time on one clock; with an offset, converted to UTC first."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:  # in UTC, past the year 9999 or before the year 1
            behind = (parsed.utcoffset() or timedelta(0)) < timedelta(0)
            parsed = datetime.max if behind else datetime.min
    return parsed


def is_official(authority: dict[str, Any]) -> bool:
    """Any kind but "none" makes an act official; an absent kind counts as official."""
    return authority.get("kind") != "none"


def covers(entry: dict[str, Any], act_id: Any) -> bool:
    """A formation or transition covers the acts it lists, or every act if it lists none."""
    acts = entry.get("acts")
    if acts is None:
        return True
    return act_id in items(acts)


def grant_mode(grant: dict[str, Any]) -> int:
    autonomy = obj(grant.get("defaults")).get("autonomy")
    return _GRANT_MODES.get(autonomy, PLAN) if isinstance(autonomy, str) else PLAN


def session_mode(envelope: dict[str, Any]) -> int | None:
    """None when the session names no mode; an unknown one is Plan."""
    context = obj(envelope.get("context"))
    if context.get("working_mode") is None:
        return None
    mode = context["working_mode"]
    return _SESSION_MODES.get(mode, PLAN) if isinstance(mode, str) else PLAN


def subset(small: list[Any], large: list[Any]) -> bool:
    """Every entry of `small` is in `large` (lists, so unhashable entries compare too)."""
    return all(entry in large for entry in small)
