"""The project's own verification rules (poa-verifier §5), from the spec's words.

Each case starts from the official `allow_within_limits` (ALLOW standing_within_limits, on
Thursday 2026-10-01 at 12:00) and changes one thing.
"""

from decimal import Decimal

import msgspec
import pytest

from services.poa.domain import verify
from tests.poa.vectors import case, drop, put


def decide(c: dict) -> tuple[str, str]:
    d = verify(c["grant"], c["parents"], c["envelope"], c["state"])
    return d.decision, d.rule_id


def base() -> dict:
    return case("verification", "allow_within_limits")


def with_(*changes: tuple[str, object]) -> dict:
    c = base()
    for path, value in changes:
        put(c, path, value)
    return c


ALLOWED = ("ALLOW", "standing_within_limits")
AMOUNT = "envelope.invocation.arguments.amount"


def test_the_base_case_is_allowed():
    assert decide(base()) == ALLOWED


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # V4 revoked: any value but false or absent
        ([("state.revoked", True)], ("DENY", "revoked")),
        ([("state.revoked", "yes")], ("DENY", "revoked")),
        ([("state.revoked", 0)], ("DENY", "revoked")),
        ([("state.revoked", None)], ALLOWED),
        # V5 not_before is inclusive
        ([("state.now", "2026-09-29T00:00:00")], ALLOWED),
        ([("state.now", "2026-09-28T23:59:59")], ("DENY", "not_yet_valid")),
        ([("grant.validity.not_before", "soon")], ("DENY", "not_yet_valid")),
        # V6 expires is exclusive; a date-only expires ends at the first instant of the day
        ([("state.now", "2026-10-05T23:59:59")], ALLOWED),
        ([("state.now", "2026-10-06T00:00:00")], ("DENY", "expired")),
        ([("grant.validity.expires", "2026-10-01")], ("DENY", "expired")),
        # an offset is converted to UTC first; values without one are compared as given
        ([("grant.validity.expires", "2026-10-01T14:00:00+02:00")], ("DENY", "expired")),
        ([("grant.validity.expires", "2026-10-01T14:00:01+02:00")], ALLOWED),
        ([("state.now", None)], ("DENY", "not_yet_valid")),
        # an instant whose UTC is past the year 9999, or before the year 1, is still read
        ([("grant.validity.expires", "9999-12-31T23:59:59-01:00")], ALLOWED),
        ([("grant.validity.not_before", "0001-01-01T00:00:00+01:00")], ALLOWED),
        ([("state.now", "9999-12-31T23:59:59-01:00")], ("DENY", "expired")),
    ],
    ids=lambda v: str(v),
)
def test_admission(changes, expected):
    assert decide(with_(*changes)) == expected


def test_an_act_the_grant_neither_holds_nor_denies_is_not_delegated():
    assert decide(with_(("envelope.invocation.act_id", "car.buy"))) == ("DENY", "act_not_delegated")


def test_an_invocation_naming_neither_act_nor_effect_is_not_delegated():
    c = drop(base(), "envelope.invocation.act_id")
    assert decide(c) == ("DENY", "act_not_delegated")


def test_an_effect_held_by_two_authorities_is_ambiguous_and_not_delegated():
    c = with_(("grant.authorities.1.effect", "compare"), ("envelope.invocation.effect", "compare"))
    drop(c, "envelope.invocation.act_id")
    assert decide(c) == ("DENY", "effect_not_delegated")


def test_an_act_named_with_another_effect_is_not_delegated():
    c = with_(("envelope.invocation.effect", "compare"))
    assert decide(c) == ("DENY", "effect_not_delegated")


def test_an_unnamed_agent_may_not_make_an_official_act():
    c = with_(("envelope.invocation.actor.sub", "urn:example:agent:stranger"))
    assert decide(c) == ("DENY", "unnamed_agent_not_allowed")


def test_an_unnamed_agent_may_read_under_read_draft():
    c = with_(
        ("envelope.invocation.actor.sub", "urn:example:agent:stranger"),
        ("envelope.invocation.act_id", "email.read"),
        ("envelope.invocation.arguments", {}),
    )
    assert decide(c) == ("ALLOW", "no_go_ahead_needed")
    put(c, "grant.work_system.unnamed_agents", "none")
    assert decide(c) == ("DENY", "unnamed_agent_not_allowed")


def test_a_prohibited_source_is_a_scope_denial():
    assert decide(with_(("envelope.context.evidence", ["inbox"]))) == (
        "DENY",
        "grounding_source_prohibited",
    )


def test_a_proposal_ceiling_denies_the_act():
    c = with_(("grant.ceilings.purchased", "proposal"))
    assert decide(c) == ("DENY", "ceiling_proposal_only")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # V23 Ask mode, from the grant
        ([("grant.defaults.autonomy", "ask_each_time")], ("ASK_USER", "mode_asks_each_time")),
        # V24 go-ahead and commit
        ([("grant.authorities.2.go_ahead", "each_time")], ("ASK_USER", "needs_go_ahead")),
        ([("grant.authorities.2.go_ahead", None)], ("ASK_USER", "needs_go_ahead")),
        ([("grant.authorities.2.commit", "user_approval")], ("ASK_USER", "needs_go_ahead")),
        # V25 a missing or unknown ceiling counts as on_confirm
        ([("grant.ceilings.purchased", "on_confirm")], ("ASK_USER", "ceiling_on_confirm")),
        ([("grant.ceilings.purchased", "whenever")], ("ASK_USER", "ceiling_on_confirm")),
        ([("grant.ceilings", {})], ("ASK_USER", "ceiling_on_confirm")),
        # V26 triggers: absent trigger is `asked`; absent triggers are ["asked"]
        ([("envelope.invocation.trigger", "message")], ("ASK_USER", "trigger_not_listed")),
        ([("envelope.invocation.trigger", "routine")], ALLOWED),
        ([("grant.defaults.triggers", None), ("envelope.invocation.trigger", "routine")],
         ("ASK_USER", "trigger_not_listed")),
        # V28 pace: anything but act_then_tell asks first
        ([("grant.defaults.pace", "ask_then_act")], ("ASK_USER", "pace_asks_first")),
        ([("grant.defaults.pace", None)], ("ASK_USER", "pace_asks_first")),
        # V29 targets
        ([("envelope.invocation.arguments.counterparty.id", "walmart")],
         ("ASK_USER", "counterparty_not_in_targets")),
        ([("envelope.invocation.arguments.counterparty.type", "person")],
         ("ASK_USER", "counterparty_not_in_targets")),
        ([("envelope.invocation.arguments.counterparty", None)],
         ("ASK_USER", "counterparty_not_in_targets")),
        ([("envelope.invocation.arguments.counterparty", None),
          ("envelope.invocation.target", {"type": "merchant", "id": "costco"})], ALLOWED),
        ([("grant.authorities.2.targets", []),
          ("envelope.invocation.arguments.counterparty", {"type": "person", "id": "bob"})],
         ("ASK_USER", "counterparty_not_in_targets")),
        ([("grant.authorities.2.targets", []), ("state.known_counterparties", ["bob"]),
          ("envelope.invocation.arguments.counterparty", {"type": "person", "id": "bob"})],
         ALLOWED),
        ([("grant.authorities.2.targets.0.scope", "any"),
          ("envelope.invocation.arguments.counterparty.id", "walmart")], ALLOWED),
        # V30 currency
        ([("envelope.invocation.arguments.currency", "EUR")], ("ASK_USER", "currency_mismatch")),
        ([("envelope.invocation.arguments.currency", None)], ("ASK_USER", "currency_mismatch")),
        # V31 per act: equal is within, one cent over asks, absent or unreadable asks
        ([(AMOUNT, 100)], ALLOWED),
        ([(AMOUNT, Decimal("100.00"))], ALLOWED),
        ([(AMOUNT, Decimal("100.01"))], ("ASK_USER", "over_per_act_limit")),
        ([(AMOUNT, 100.01)], ("ASK_USER", "over_per_act_limit")),
        ([(AMOUNT, "40")], ("ASK_USER", "over_per_act_limit")),
        ([(AMOUNT, True)], ("ASK_USER", "over_per_act_limit")),
        ([(AMOUNT, None)], ("ASK_USER", "over_per_act_limit")),
        ([("grant.authorities.2.limits.transaction_amount_lte", 200), (AMOUNT, 150)],
         ("ASK_USER", "over_per_act_limit")),
        # V32 categories
        ([("envelope.invocation.arguments.category", "garden")],
         ("ASK_USER", "category_not_allowed")),
        ([("envelope.invocation.arguments.category", None)], ("ASK_USER", "category_not_allowed")),
        # V33 month: spent + amount, equal is within
        ([("state.spent_month_usd", 700), (AMOUNT, 100)], ALLOWED),
        ([("state.spent_month_usd", Decimal("700.01")), (AMOUNT, 100)],
         ("ASK_USER", "over_monthly_limit")),
        ([("state.spent_month_usd", None)], ("ASK_USER", "over_monthly_limit")),
        # ... added exactly, where the default context rounds to 28 digits (to 800 here)
        ([("state.spent_month_usd", 760), (AMOUNT, Decimal("40.0000000000000000000000000001"))],
         ("ASK_USER", "over_monthly_limit")),
        ([("state.spent_month_usd", Decimal("759.9999999999999999999999999999")), (AMOUNT, 40)],
         ALLOWED),
        # money past 40 digits each side of the point is unreadable, as a non-number is
        ([(AMOUNT, Decimal("1e-41"))], ("ASK_USER", "over_per_act_limit")),
        ([(AMOUNT, Decimal("1e-40"))], ALLOWED),
        ([(AMOUNT, Decimal("40.00000000000000000000000000000000000000000000"))], ALLOWED),
        ([("grant.authorities.2.limits.transaction_amount_lte", 10**40)],
         ("ASK_USER", "over_per_act_limit")),
        ([("state.spent_month_usd", Decimal("-1e999999999"))], ("ASK_USER", "over_monthly_limit")),
        ([("grant.authorities.2.limits.monthly_total_lte", 5000), ("state.spent_month_usd", 750),
          (AMOUNT, 60)], ("ASK_USER", "over_monthly_limit")),
        # V34 official acts a day: equal is within
        ([("state.binding_acts_today", 4)], ALLOWED),
        ([("state.binding_acts_today", 5)], ("ASK_USER", "over_daily_binding_acts")),
        ([("state.binding_acts_today", None)], ("ASK_USER", "over_daily_binding_acts")),
        # V35 grounding: allowed sources, or refs the actor relies on in the plan
        ([("envelope.context.evidence", ["accounts"])], ALLOWED),
        ([("envelope.context.evidence", ["crm"])], ("ASK_USER", "grounding_source_not_allowed")),
        ([("envelope.context.evidence", ["src-x"]),
          ("grant.grounding_plan", {"sources": [{"ref": "src-x"}],
                                    "relies_on": {"urn:example:agent:a_456": ["src-x"]}})],
         ALLOWED),
        ([("envelope.context.evidence", ["src-x"]),
          ("grant.grounding_plan", {"sources": [{"ref": "src-x"}],
                                    "relies_on": {"urn:example:agent:b": ["src-x"]}})],
         ("ASK_USER", "grounding_source_not_allowed")),
    ],
    ids=lambda v: str(v),
)  # fmt: skip
def test_asks(changes, expected):
    assert decide(with_(*changes)) == expected


@pytest.mark.parametrize(
    ("hours", "expected"),
    [
        ({"start": "09:00", "end": "17:00"}, ALLOWED),
        ({"start": "12:00", "end": "17:00"}, ALLOWED),  # start is inclusive
        ({"start": "09:00", "end": "12:00"}, ("ASK_USER", "outside_hours")),  # end is exclusive
        ({"start": "22:00", "end": "13:00"}, ALLOWED),  # wraps past midnight
        ({"start": "13:00", "end": "11:00"}, ("ASK_USER", "outside_hours")),
        ({"start": "00:00", "end": "24:00"}, ALLOWED),
        ({"start": "12:00", "end": "12:00"}, ("ASK_USER", "outside_hours")),  # empty
        ({"start": "09:00", "end": "17:00", "days": ["thu"]}, ALLOWED),
        ({"start": "09:00", "end": "17:00", "days": ["sat", "sun"]}, ("ASK_USER", "outside_hours")),
        ({"start": "9am", "end": "17:00"}, ("ASK_USER", "outside_hours")),  # unreadable
        ({"start": "09:00", "end": "17:00", "days": ["someday"]}, ("ASK_USER", "outside_hours")),
    ],
    ids=lambda v: str(v),
)
def test_working_hours(hours, expected):
    assert decide(with_(("grant.defaults.hours", hours))) == expected


def test_a_non_official_act_needs_no_go_ahead():
    c = with_(
        ("envelope.invocation.act_id", "shop.research"), ("envelope.invocation.arguments", {})
    )
    assert decide(c) == ("ALLOW", "no_go_ahead_needed")


def test_plan_mode_still_prepares():
    c = with_(
        ("grant.defaults.autonomy", "draft_only"),
        ("envelope.invocation.act_id", "shop.cart"),
        ("envelope.invocation.arguments", {}),
    )
    assert decide(c) == ("ALLOW", "no_go_ahead_needed")


def test_money_is_compared_as_decimals_never_binary_floats():
    raw = msgspec.json.encode(
        with_(("grant.authorities.2.limits.transaction_amount_lte", 0.3))
    ).replace(b'"amount":40', b'"amount":0.30000000000000000001')
    c = msgspec.json.Decoder(float_hook=Decimal).decode(raw)
    assert decide(c) == ("ASK_USER", "over_per_act_limit")
    c["envelope"]["invocation"]["arguments"]["amount"] = Decimal("0.1") + Decimal("0.2")
    assert decide(c) == ALLOWED


# Order: when two checks fire, the earlier wins.


def test_every_denial_comes_before_every_ask():
    c = with_(("envelope.context.evidence", ["inbox"]), (AMOUNT, 140))
    assert decide(c) == ("DENY", "grounding_source_prohibited")


def test_an_unlisted_trigger_asks_before_a_crossed_limit():
    c = with_(("envelope.invocation.trigger", "message"), (AMOUNT, 140))
    assert decide(c) == ("ASK_USER", "trigger_not_listed")


def test_the_per_act_limit_asks_before_the_monthly_limit():
    c = with_((AMOUNT, 140), ("state.spent_month_usd", 790))
    assert decide(c) == ("ASK_USER", "over_per_act_limit")


def test_revocation_is_judged_before_validity():
    c = with_(("state.revoked", True), ("state.now", "2030-01-01"))
    assert decide(c) == ("DENY", "revoked")


def test_the_act_id_comes_back_once_resolved():
    d = verify(**{k: base()[k] for k in ("grant", "parents", "envelope", "state")})
    assert d.act_id == "shop.buy"
