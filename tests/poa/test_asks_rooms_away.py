"""An ask is timed before it is put in the person's room: one whose question could not be
asked (the rooms away, and the agent never sending its act again) still expires, and lets
go of its place among the person's open asks. Before, it was timed after its question, so
it stayed open for good, and sixteen of them would have stopped every ask after."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.contracts import poa
from tests.personal.conftest import eventually
from tests.poa.conftest import Asker


@pytest.fixture
def poa_clock():
    """Running behind the scheduler's, so an ask of a minute lapses in seconds."""
    return lambda: datetime.now(UTC) - timedelta(seconds=57)


@pytest.fixture
async def rooms_service():
    """The rooms away: no replica serves their subjects."""
    yield None


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT,))


async def test_an_ask_whose_question_failed_expires_all_the_same(api, org):
    ada = Asker.of(org)
    me = ada.me
    await ada.issue(api)
    acted = await ada.act(api)
    assert acted.status == 503, await acted.text()  # asked of the rooms, which are away
    (ask,) = (await (await api.get("/v1/poa/asks", headers=me)).json())["asks"]
    assert (ask["state"], ask["room"]) == ("open", None)

    async def lapsed() -> dict | None:
        found = await (await api.get(f"/v1/poa/asks/{ask['id']}", headers=me)).json()
        return found if found["state"] != "open" else None

    found = await eventually(lapsed, timeout=30)
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "ask_expired")
