"""The project's own containment rules (poa-verifier §4) and lineage checks (V7-V11).

Containment cases start from the official `child_ok` (or `formation_kept`) and change one
thing; lineage cases from the official `child_within_parent`.
"""

import pytest

from services.poa.domain import contain, verify
from tests.poa.vectors import case, drop, put

SHOP_BUY = "child.authorities.0"


def violations(c: dict) -> list[str]:
    result = contain(c["parent"], c["child"])
    assert result.ok == (not result.violations)
    return list(result.violations)


def with_(*changes: tuple[str, object], base: str = "child_ok") -> dict:
    c = case("containment", base)
    for path, value in changes:
        put(c, path, value)
    return c


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ([("child.principal.sub", "urn:example:principal:eve")], ["principal_changed"]),
        ([("parent.delegation.allowed", False)], ["delegation_not_allowed"]),
        ([("child.delegation.chain.0.grant_id", "poa_other")], ["chain_broken"]),
        ([("child.delegate.name", "stranger")], ["delegate_not_named"]),
        ([("parent.delegation.named_agents", []), ("child.delegate.name", "stranger")], []),
        ([("parent.delegation.max_depth", 0), ("child.delegation.max_depth", 0)],
         ["depth_exceeded"]),
        ([("child.delegation.max_depth", 2)], ["max_depth_wider"]),
        ([("child.validity.expires", "2026-10-07")], ["expires_wider"]),
        ([("child.validity.expires", "2026-10-06")], []),
        ([("child.validity.not_before", "2026-09-28")], ["not_before_wider"]),
        ([("child.validity.not_before", None)], ["not_before_wider"]),
        # C10 authorities: a new act, or a held act with another effect or kind
        ([(f"{SHOP_BUY}.act_id", "shop.lease")], ["authority_added:shop.lease"]),
        ([(f"{SHOP_BUY}.kind", "none")], ["authority_added:shop.buy"]),
        # C11 limits: equal is within, one cent over is raised, a dropped key is raised
        ([(f"{SHOP_BUY}.limits.transaction_amount_lte", 100)], []),
        ([(f"{SHOP_BUY}.limits.transaction_amount_lte", 100.01)],
         ["limit_raised:shop.buy.transaction_amount_lte"]),
        ([(f"{SHOP_BUY}.limits.monthly_total_lte", None)],
         ["limit_raised:shop.buy.monthly_total_lte"]),
        ([(f"{SHOP_BUY}.limits.categories_in", ["household", "garden"])],
         ["limit_raised:shop.buy.categories_in"]),
        ([(f"{SHOP_BUY}.limits.currency", "EUR")], ["limit_raised:shop.buy.currency"]),
        ([(f"{SHOP_BUY}.targets.0.ids", ["amazon", "walmart"])], ["targets_widened:shop.buy"]),
        ([(f"{SHOP_BUY}.targets.0.scope", "any")], ["targets_widened:shop.buy"]),
        ([(f"{SHOP_BUY}.targets.0.ids", ["amazon"])], []),
        ([("parent.authorities.2.go_ahead", "each_time")], ["go_ahead_loosened:shop.buy"]),
        ([("parent.authorities.2.commit", "user_approval")], ["commit_loosened:shop.buy"]),
        ([(f"{SHOP_BUY}.grounding.allowed_sources", ["preferences", "web"])],
         ["allowed_source_added:shop.buy"]),
        ([(f"{SHOP_BUY}.grounding.prohibited_sources", ["inbox"])],
         ["prohibited_source_dropped:shop.buy"]),
        # C17 ceilings, C18 autonomy, C19 grant-wide limits
        ([("child.ceilings.deleted", "on_confirm")], ["ceiling_loosened:deleted"]),
        ([("child.ceilings.novel", "self_within_limits")], ["ceiling_loosened:novel"]),
        ([("child.ceilings.purchased", "proposal")], []),
        ([("parent.defaults.autonomy", "ask_each_time")], ["autonomy_loosened"]),
        ([("child.defaults.limits.per_act_usd", 101)], ["limit_raised:defaults.per_act_usd"]),
        ([("child.defaults.max_binding_per_day", 6)],
         ["limit_raised:defaults.max_binding_per_day"]),
        ([("child.defaults.max_binding_per_day", None)],
         ["limit_raised:defaults.max_binding_per_day"]),
        ([("child.defaults.targets.1.ids", ["amazon", "costco", "ikea"])],
         ["targets_widened:defaults"]),
        ([("child.defaults.triggers", ["asked", "message"])], ["triggers_widened"]),
        ([("child.defaults.triggers", None)], []),
        ([("child.defaults.pace", "ask_then_act")], []),
        ([("parent.defaults.pace", "ask_then_act")], ["pace_loosened"]),
        ([("child.defaults.grounding.allowed_sources", ["preferences", "inbox"])],
         ["allowed_source_added:defaults"]),
        ([("parent.work_system.unnamed_agents", None), ("child.work_system.unnamed_agents",
          "read_draft")], ["unnamed_agents_widened"]),
    ],
    ids=lambda v: str(v),
)  # fmt: skip
def test_containment_rule(changes, expected):
    assert violations(with_(*changes)) == expected


@pytest.mark.parametrize(
    ("parent_hours", "child_hours", "widened"),
    [
        ({"start": "09:00", "end": "17:00"}, {"start": "10:00", "end": "16:00"}, False),
        ({"start": "09:00", "end": "17:00"}, {"start": "08:00", "end": "16:00"}, True),
        ({"start": "09:00", "end": "17:00"}, None, True),
        ({"start": "09:00", "end": "17:00", "days": ["mon"]},
         {"start": "09:00", "end": "17:00"}, True),
        ({"start": "09:00", "end": "17:00"},
         {"start": "09:00", "end": "17:00", "days": ["mon"]}, False),
        ({"start": "22:00", "end": "06:00"}, {"start": "23:00", "end": "05:00"}, True),
        ({"start": "22:00", "end": "06:00"}, {"start": "22:00", "end": "06:00"}, False),
        ({"start": "x"}, {"start": "x"}, False),  # identical, though unreadable
    ],
)  # fmt: skip
def test_hours_widened(parent_hours, child_hours, widened):
    c = with_(("parent.defaults.hours", parent_hours), ("child.defaults.hours", child_hours))
    assert violations(c) == (["hours_widened"] if widened else [])


def test_every_violation_is_listed_in_the_order_of_the_steps():
    c = with_(
        ("child.defaults.pace", None),
        ("child.validity.expires", None),
        ("child.principal.sub", "urn:example:principal:eve"),
        (f"{SHOP_BUY}.limits.transaction_amount_lte", 500),
        ("child.ceilings.deleted", "self_within_limits"),
    )
    assert violations(c) == [
        "principal_changed",
        "expires_wider",
        "limit_raised:shop.buy.transaction_amount_lte",
        "ceiling_loosened:deleted",
    ]


def test_a_formation_that_no_longer_covers_the_delegated_act_is_dropped():
    c = with_(("child.formations.0.acts", ["shop.cart"]), base="formation_kept")
    assert violations(c) == ["formation_dropped:hub.manager_worker"]


def test_a_formation_with_a_weaker_settlement_is_weakened():
    c = with_(("child.formations.0.settlement.kind", "protocol_convergence"), base="formation_kept")
    assert violations(c) == ["formation_settlement_weakened:hub.manager_worker"]


def test_a_lower_approval_threshold_weakens_the_settlement():
    c = with_(
        ("parent.formations.0.settlement.threshold", {"approvals": 2}),
        ("child.formations.0.settlement.threshold", {"approvals": 1}),
        base="formation_kept",
    )
    assert violations(c) == ["formation_settlement_weakened:hub.manager_worker"]


def test_a_formation_covering_no_delegated_act_may_be_dropped():
    c = with_(("parent.formations.0.acts", ["shop.cart"]), ("child.formations", []),
              base="formation_kept")  # fmt: skip
    assert violations(c) == []


def test_containment_of_unreadable_grants_fails_closed():
    assert contain("not a grant", None).ok is False


# Lineage (V7-V11), through verification.


def lineage(*changes: tuple[str, object]) -> tuple[str, str]:
    c = case("verification", "child_within_parent")
    for path, value in changes:
        put(c, path, value)
    d = verify(c["grant"], c["parents"], c["envelope"], c["state"])
    return d.decision, d.rule_id


def test_the_official_child_is_allowed():
    assert lineage() == ("ALLOW", "standing_within_limits")


def test_a_link_with_no_presented_parent_is_denied():
    assert lineage(("parents", [])) == ("DENY", "parent_missing")


def test_an_ancestor_of_another_version_is_denied():
    assert lineage(("parents.0.poa_version", "1.2")) == ("DENY", "unsupported_version")


def test_a_chain_deeper_than_an_ancestor_allows_is_denied():
    assert lineage(("parents.0.delegation.max_depth", 0)) == ("DENY", "delegation_too_deep")


def test_a_child_wider_than_its_parent_is_not_contained_and_says_why():
    c = case("verification", "child_within_parent")
    put(c, "grant.authorities.0.limits.transaction_amount_lte", 500)
    d = verify(c["grant"], c["parents"], c["envelope"], c["state"])
    assert (d.decision, d.rule_id, d.parent_id, d.violations) == (
        "DENY",
        "not_contained",
        "poa_8c21",
        ("limit_raised:shop.buy.transaction_amount_lte",),
    )


def test_parents_not_named_by_the_chain_are_ignored():
    c = case("verification", "child_within_parent")
    c["parents"].append({"grant_id": "unrelated", "poa_version": "0.1"})
    d = verify(c["grant"], c["parents"], c["envelope"], c["state"])
    assert (d.decision, d.rule_id) == ("ALLOW", "standing_within_limits")


def test_outside_carrier_mode_every_presented_grant_is_taken_as_verified():
    c = case("verification", "child_within_parent")
    drop(c, "state.authenticated_grant_ids")
    assert verify(c["grant"], c["parents"], c["envelope"], c["state"]).rule_id == (
        "standing_within_limits"
    )
