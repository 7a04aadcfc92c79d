"""What follows an ask's settling (the event for its agent) is made whole when what settled
it comes again. Here the expiry is stored while the EVENTS stream takes nothing (as in a
failover, the bus away between the two): the timer's fire fails and is delivered again, and
that delivery publishes the event. Before, it found the ask settled and did nothing, and the
agent never heard."""

import contextlib
import dataclasses
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from nats.js.api import DiscardPolicy

from libs.contracts import poa, rooms
from tests.personal.conftest import eventually
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.support import bearer, published_from_now, token

AGENT = "urn:example:agent:a_456"


@pytest.fixture
def poa_clock():
    """Running behind the scheduler's, so an ask of a minute lapses in seconds."""
    return lambda: datetime.now(UTC) - timedelta(seconds=57)


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


@contextlib.asynccontextmanager
async def events_refused(js):
    """EVENTS taking no message more until the block ends."""
    info = await js.stream_info("EVENTS")
    full = dataclasses.replace(info.config, discard=DiscardPolicy.NEW, max_msgs=info.state.messages)
    await js.update_stream(full)
    try:
        yield
    finally:
        await js.update_stream(info.config)


async def test_an_expiry_whose_event_failed_is_announced_when_its_fire_comes_again(
    api, org, operator
):
    user = f"{org}/ada"
    me, agent = bearer(token(org=org, user=user)), bearer(token(org=org, user=user, act=AGENT))
    body = {"grant": valid_now(root_grant(user)), "ask_expires_s": 60}
    assert (await api.post("/v1/poa/grants", json=body, headers=me)).status == 201
    js = operator.jetstream()
    events = await published_from_now(js, poa.ASK_ANSWERED.name)
    acted = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(140)}, headers=agent
    )
    ask_id = (await acted.json())["ask"]
    async with events_refused(js):

        async def lapsed() -> bool:
            found = await (await api.get(f"/v1/poa/asks/{ask_id}", headers=me)).json()
            return found["state"] == "denied"

        await eventually(lapsed, timeout=30)
    answered = msgspec.json.decode((await events.next_msg(timeout=60)).data)
    while answered["id"] != ask_id:
        answered = msgspec.json.decode((await events.next_msg(timeout=60)).data)
    assert answered["decision"]["rule_id"] == "ask_expired"
