"""An ask once answered is kept for a while, read back by the agent that asked, and then
removed by the server with its question's key: before this, every ask a person was ever put
stayed, and each look at their asks read them all. Kept here for two seconds, not a week."""

from datetime import UTC, datetime

import pytest

from libs.contracts import poa, rooms
from libs.contracts.base import key_token
from libs.runtime.leader import newest_seq
from tests.personal.conftest import eventually
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.support import bearer, token

AGENT = "urn:example:agent:a_456"
STREAM = "KV_poa-asks"


@pytest.fixture
def settled_kept() -> int:
    """TETHER_SETTLED_KEPT, as the services read it."""
    return 2


@pytest.fixture
def poa_clock():
    """The real clock, as the scheduler's (an ask's expiry is a timer on it)."""
    return lambda: datetime.now(UTC)


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


async def test_a_declined_ask_is_read_back_then_nothing_of_it_is_stored(api, org, operator):
    user = f"{org}/ada"
    me, agent = bearer(token(org=org, user=user)), bearer(token(org=org, user=user, act=AGENT))
    issued = await api.post(
        "/v1/poa/grants", json={"grant": valid_now(root_grant(user))}, headers=me
    )
    assert issued.status == 201, await issued.text()
    acted = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(140)}, headers=agent
    )
    assert acted.status == 202, await acted.text()
    ask_id = (await acted.json())["ask"]
    ask = await (await api.get(f"/v1/poa/asks/{ask_id}", headers=agent)).json()
    question = f"_question.{ask['room']}.{ask['question_seq']}"
    keys = [f"{org}.{key_token(user)}.{ask_id}", question]

    answered = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "decline"}, headers=me
    )
    assert answered.status == 200, await answered.text()
    read_back = await api.get(f"/v1/poa/asks/{ask['id']}", headers=agent)
    assert (await read_back.json())["state"] == "denied"

    js = operator.jetstream()

    async def gone() -> bool:
        seqs = [await newest_seq(js, STREAM, f"$KV.poa-asks.{key}") for key in keys]
        return seqs == [0, 0]

    await eventually(gone, timeout=30)
    after = await api.get(f"/v1/poa/asks/{ask['id']}", headers=agent)
    assert after.status == 404
    assert await (await api.get("/v1/poa/asks", headers=me)).json() == {"asks": [], "more": False}
