"""A token is verified once and remembered, but its expiry is read again at every use."""

import time

import pytest

from libs.contracts.problem import Refused
from services.gateway import tokens
from tests.support import KEY


def test_a_remembered_token_still_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    now = int(time.time())
    token = tokens.mint(KEY, org="acme", user="acme/ada", now=now, ttl=60)
    header = f"Bearer {token}"
    assert tokens.principal_from(header, KEY).sub == "acme/ada"
    # Past its expiry and the leeway, the same token, already verified once, is refused.
    monkeypatch.setattr(tokens.time, "time", lambda: now + 60 + 31)
    with pytest.raises(Refused) as refused:
        tokens.principal_from(header, KEY)
    assert refused.value.problem.rule == "token-expired"


def test_a_remembered_token_is_checked_against_its_key() -> None:
    token = tokens.mint(KEY, org="acme", user="acme/ada", now=int(time.time()))
    tokens.principal_from(f"Bearer {token}", KEY)
    with pytest.raises(Refused) as refused:
        tokens.principal_from(f"Bearer {token}", "another-key-" * 4)
    assert refused.value.problem.rule == "token-forged"
