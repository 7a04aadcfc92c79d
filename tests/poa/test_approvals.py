"""An ask as the person's answer leaves it, decided purely: what a keyed answer sent again
(its first answer lost in a failover) is answered with, instead of a refusal."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from libs.contracts.poa import AskRecord, GrantRecord
from services.poa.domain import approvals, open_asks
from services.poa.domain.decisions import allow, deny

NOW = datetime(2026, 12, 3, tzinfo=UTC)
OPEN = AskRecord(
    id="ask_1", org="acme", person="acme/ada", agent="urn:example:agent:a", grant_id="poa_1",
    act_id="act_1", rule_id="over_per_act_limit", act="shop.buy", envelope={}, official=True,
    asked_at=NOW, expires_at=NOW + timedelta(minutes=1),
)  # fmt: skip
YES = allow(approvals.APPROVED, "act_1")
REFUSED_ON_THE_LEDGER = deny("over_monthly_limit", "act_1")


@pytest.mark.parametrize(
    ("ask", "approve", "decline"),
    [
        (OPEN, False, False),
        (approvals.approved(OPEN, YES, NOW), True, False),
        (approvals.approved(OPEN, approvals.outcome(REFUSED_ON_THE_LEDGER, "act_1"), NOW),
         True, False),
        (approvals.declined(OPEN, NOW), False, True),
        (approvals.expired(OPEN, NOW), False, False),
        # a yes meets the revocation too, so an approval sent again is answered with it
        (approvals.revoked(OPEN, NOW), True, False),
    ],
    ids=["open", "approved", "approved, denied on the ledger", "declined", "expired", "revoked"],
)  # fmt: skip
def test_an_ask_stands_answered_as_only_the_answer_that_left_it_so(ask, approve, decline):
    assert (approvals.answered_as(ask, "approve"), approvals.answered_as(ask, "decline")) == (
        approve,
        decline,
    )


def test_a_revocation_denies_an_open_ask_and_leaves_an_answered_one_as_it_was():
    revoked = approvals.revoked(OPEN, NOW)
    assert (revoked.state, revoked.decision, revoked.answered_at) == (
        "denied",
        deny("revoked", "act_1"),
        NOW,
    )
    declined = approvals.declined(OPEN, NOW)
    assert approvals.revoked(declined, NOW + timedelta(seconds=1)) == declined


def test_an_open_ask_past_its_expiry_has_lapsed_and_holds_no_place():
    """Its timer late or lost, no answer can allow it: its agent's place is free to take."""
    place = open_asks.Place(OPEN.id, NOW)
    at_expiry = OPEN.expires_at
    assert not approvals.lapsed(OPEN, at_expiry - timedelta(microseconds=1))
    assert approvals.lapsed(OPEN, at_expiry)
    assert not approvals.lapsed(approvals.declined(OPEN, NOW), at_expiry)
    assert not open_asks.spent(place, OPEN, at_expiry - timedelta(microseconds=1))
    assert open_asks.spent(place, OPEN, at_expiry)


@pytest.mark.parametrize(
    ("amount", "shown"),
    [(140, "140"), (Decimal("1.4E+2"), "140"), (Decimal("1E-7"), "0.0000001"), ("140", '"140"')],
)
def test_an_asks_amount_is_written_out_for_the_person(amount, shown):
    record = GrantRecord(
        id="poa_1", org="acme", owner="acme/ada", delegate="urn:example:agent:a",
        parent_id=None, revoked=False, issued_at=NOW,
    )  # fmt: skip
    envelope = {"invocation": {"arguments": {"amount": amount, "currency": "USD"}}}
    ask = approvals.opened(record, YES, envelope, "urn:example:agent:a", NOW)
    assert ask.amount == shown
    assert f"for {shown} USD" in approvals.question(ask)
