"""The poa service on the test stack, with a clock fixed inside the vectors' validity."""

import copy
from datetime import UTC, datetime, timedelta

import pytest

from tests.poa.vectors import case

NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)  # a Thursday, inside every vector's validity


@pytest.fixture
def poa_clock():
    return lambda: NOW


def root_grant(user: str) -> dict:
    """The official `allow_within_limits` grant, issued in `user`'s name."""
    grant = copy.deepcopy(case("verification", "allow_within_limits")["grant"])
    grant["principal"]["sub"] = user
    return grant


def purchase(amount: object = 40, actor: str = "urn:example:agent:a_456") -> dict:
    envelope = copy.deepcopy(case("verification", "allow_within_limits")["envelope"])
    envelope["invocation"]["arguments"]["amount"] = amount
    envelope["invocation"]["actor"]["sub"] = actor
    return envelope


def valid_now(grant: dict) -> dict:
    """`grant`, valid from two days ago to five days on, for a service on the real clock."""
    today = datetime.now(UTC).date()
    grant["validity"] = {
        "not_before": (today - timedelta(days=2)).isoformat(),
        "expires": (today + timedelta(days=5)).isoformat(),
    }
    return grant
