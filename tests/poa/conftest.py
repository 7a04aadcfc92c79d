"""The poa service on the test stack, with a clock fixed inside the vectors' validity."""

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from tests.poa.vectors import case
from tests.support import bearer, token

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


class Asker(NamedTuple):
    """Ada of `org`: her id, her token, and her agent's (`urn:example:agent:a_456`)."""

    user: str
    me: dict[str, str]
    agent: dict[str, str]

    @classmethod
    def of(cls, org: str) -> "Asker":
        user = f"{org}/ada"
        agent = bearer(token(org=org, user=user, act="urn:example:agent:a_456"))
        return cls(user, bearer(token(org=org, user=user)), agent)

    async def issue(self, api, ask_expires_s: int = 60) -> None:
        """The official grant, valid around today, its asks lapsing after `ask_expires_s`."""
        body = {"grant": valid_now(root_grant(self.user)), "ask_expires_s": ask_expires_s}
        issued = await api.post("/v1/poa/grants", json=body, headers=self.me)
        assert issued.status == 201, await issued.text()

    async def act(self, api):
        """Her agent's purchase of 140, over the grant's per-act limit of 100: it asks."""
        return await api.post(
            "/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(140)}, headers=self.agent
        )


async def decided(api, grant_id: str, envelope: dict, headers: dict, key: str) -> tuple[int, dict]:
    """An act on `grant_id`, sent under the Idempotency-Key `key` and asked again, as a
    client would, while the answer is a transient failure (a busy machine's 503 or 504, or
    the key still in flight): decided once, and only a decision is an answer."""
    keyed = headers | {"Idempotency-Key": key}
    for _ in range(100):
        response = await api.post(
            f"/v1/poa/grants/{grant_id}/acts", json={"envelope": envelope}, headers=keyed
        )
        outcome = await response.json()
        if response.status not in (409, 503, 504) or "decision" in outcome:
            break
        await asyncio.sleep(0.1)
    assert "decision" in outcome, (response.status, outcome)
    return response.status, outcome
