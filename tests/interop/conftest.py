"""The rooms service and the agents service it asks for a plan's limits, on the test stack."""

import pytest

from libs.contracts import agents
from libs.model import Scripted
from services.agents.domain.prompt import acknowledged
from services.agents.main import serve as serve_agents
from tests.support import serving


@pytest.fixture
async def agents_service(settings_for, audit_service):
    async with serving(
        agents.CONTRACT,
        settings_for("agents"),
        lambda svc: serve_agents(svc, Scripted(acknowledged)),
    ) as svc:
        yield svc
