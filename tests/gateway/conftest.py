"""A gateway on the test stack, in front of the echo service."""

import secrets
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.app import init_app
from services.gateway.routes import Route
from services.gateway.settings import GatewaySettings
from services.gateway.tokens import mint
from tests.support import ECHO, OTHER, SAY, Echo, running

KEY = secrets.token_hex(32)
ROUTES = (
    Route("POST", "/v1/echo", SAY, "echo the body's text", status=201),
    Route("GET", "/v1/echo/{text}", SAY, "echo the path's text", query=("delay_ms",)),
    Route("POST", "/v1/other", OTHER.subjects[0], "a service that is not running"),
)


def token(org: str | None = "acme", user: str = "acme/ada", **claims: object) -> str:
    now = int(time.time())
    return mint(KEY, org=org, user=user, now=now, **claims)  # type: ignore[arg-type]


def bearer(value: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {value or token()}"}


@pytest.fixture
def gateway_settings(stack) -> GatewaySettings:
    return GatewaySettings(
        jwt_key=KEY,
        redis_url=stack.redis_url,
        nats_url=stack.nats_url,
        nats_password=stack.passwords["gateway"],
        rate_limit=0,
    )


@pytest.fixture
async def echo(settings_for) -> AsyncIterator[Echo]:
    echo = Echo("r1")
    async with running(ECHO, settings_for("echo"), lambda _: {SAY: echo.say}):
        yield echo


@pytest.fixture
async def client_for():
    """client_for(settings): an HTTP client of a gateway built with init_app."""
    clients: list[TestClient] = []

    async def client_for(settings: GatewaySettings, services=(ECHO,)) -> TestClient:
        app = init_app(settings, routes=ROUTES, services=services)
        client = TestClient(TestServer(app))
        await client.start_server()
        clients.append(client)
        return client

    yield client_for
    for client in clients:
        await client.close()


@pytest.fixture
async def client(client_for, gateway_settings, echo) -> TestClient:
    return await client_for(gateway_settings)
