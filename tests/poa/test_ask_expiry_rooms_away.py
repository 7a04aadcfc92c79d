"""An ask's expiry asks the rooms for the person's answer before it denies the ask. With the
rooms away past every try, the expiry is parked and done again until they are back: the
ask is then denied as expired. Dropped, it would stay open and its agent wait for good."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.contracts import poa, rooms
from services.poa.main import serve as serve_poa
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.chonk.conftest import stopped
from tests.personal.conftest import eventually
from tests.poa.conftest import Asker
from tests.support import FAST_RETRY, LINES_KEY, parked_holding, serving


def poa_clock() -> datetime:
    """Running behind the scheduler's, so an ask of a minute lapses in seconds."""
    return datetime.now(UTC) - timedelta(seconds=57)


@pytest.fixture
async def poa_service(settings_for, audit_service, rooms_service, scheduler_service):
    serve = lambda svc: serve_poa(svc, poa_clock, retry=FAST_RETRY)  # noqa: E731
    async with serving(poa.CONTRACT, settings_for("poa"), serve) as svc:
        yield svc


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


async def test_an_expiry_the_rooms_could_not_answer_denies_the_ask_once_they_are_back(
    api, org, operator, rooms_service, settings_for
):
    ada = Asker.of(org)
    me = ada.me
    await ada.issue(api)
    acted = await ada.act(api)
    outcome = await acted.json()
    assert acted.status == 202, outcome
    await stopped(operator, rooms_service, rooms.ANSWER_OF.published_by("poa"))
    await eventually(lambda: parked_holding(operator, "poa.poa", outcome["ask"]), timeout=30)
    found = await (await api.get(f"/v1/poa/asks/{outcome['ask']}", headers=me)).json()
    assert found["state"] == "open"
    sealer = Sealer.from_hex(LINES_KEY)
    async with serving(rooms.CONTRACT, settings_for("rooms"), lambda s: serve_rooms(s, sealer)):

        async def settled() -> dict | None:
            found = await (await api.get(f"/v1/poa/asks/{outcome['ask']}", headers=me)).json()
            return found if found["state"] != "open" else None

        found = await eventually(settled, timeout=30)
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "ask_expired")
