"""A gateway on the test stack, in front of the echo service."""

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient

from services.gateway.routes import Route
from tests.support import ECHO, OTHER, SAY, Echo, running

ROUTES = (
    Route("POST", "/v1/echo", SAY, "echo the body's text", status=201),
    Route("GET", "/v1/echo/{text}", SAY, "echo the path's text", query=("delay_ms",)),
    Route(
        "POST",
        "/v1/echo/{text}/again",
        SAY,
        "echo the path's text, a POST given whole by it",
        query=("delay_ms",),
    ),
    Route("POST", "/v1/other", OTHER.subjects[0], "a service that is not running"),
)


@pytest.fixture
async def echo(settings_for) -> AsyncIterator[Echo]:
    echo = Echo("r1")
    async with running(ECHO, settings_for("echo"), lambda _: {SAY: echo.say}):
        yield echo


@pytest.fixture
async def client(client_for, gateway_settings, echo) -> TestClient:
    return await client_for(gateway_settings, services=(ECHO,), routes=ROUTES)
