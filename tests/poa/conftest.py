"""The poa service on the test stack, with a clock fixed inside the vectors' validity."""

import copy
from datetime import UTC, datetime

import pytest

from libs.audit.trail import Trail
from libs.contracts.poa import CONTRACT
from services.poa.handlers import Handlers
from services.poa.store import open_stores
from tests.poa.vectors import case
from tests.support import running

NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)  # a Thursday, inside every vector's validity


@pytest.fixture
async def poa_service(settings_for, audit_service):
    async def table_of(svc):
        grants, ledger = await open_stores(svc.js)
        return Handlers(grants, ledger, Trail(svc.nc, service="poa"), clock=lambda: NOW).table()

    async with running(CONTRACT, settings_for("poa"), table_of) as svc:
        yield svc


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
