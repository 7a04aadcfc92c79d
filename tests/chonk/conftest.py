"""The chonk service behind a gateway, and the people of sim-lanternfish."""

import pytest

from libs.contracts import chonk, rooms
from tests.support import bearer, token

ORG = "sim-lanternfish"


@pytest.fixture
async def api(client_for, gateway_settings, chonk_service):
    return await client_for(gateway_settings, services=(chonk.CONTRACT, rooms.CONTRACT))


def person(name: str, **claims) -> dict[str, str]:
    return bearer(token(org=ORG, user=f"{ORG}/{name}", **claims))
