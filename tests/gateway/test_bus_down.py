"""The gateway while its NATS server is gone: a request is refused 503 at once and never
sent, so it cannot run later, when the bus is back and its client has long given up."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from aiohttp.test_utils import TestClient

from libs.runtime.settings import Settings
from services.gateway.app import NATS
from tests.gateway.conftest import ROUTES
from tests.personal.conftest import eventually, problem
from tests.support import ECHO, SAY, Bus, Echo, Link, bearer, running


@pytest.fixture
async def bus(tmp_path: Path) -> AsyncIterator[Bus]:
    bus = Bus(tmp_path)
    yield bus
    await bus.stop()


@pytest.fixture
async def echo(bus: Bus) -> AsyncIterator[Echo]:
    echo = Echo("r1")
    settings = Settings(service="echo", nats_url=bus.url, metrics_port=0)
    async with running(ECHO, settings, lambda _: {SAY: echo.say}):
        yield echo


@pytest.fixture
async def api(client_for, gateway_settings, bus, echo) -> TestClient:
    settings = msgspec.structs.replace(
        gateway_settings, nats_url=bus.url, nats_password="", request_timeout=1.0
    )
    return await client_for(settings, services=(ECHO,), routes=ROUTES)


async def test_a_request_while_the_bus_is_gone_is_refused_503_and_never_runs(api, echo, bus, org):
    assert (await api.get("/v1/echo/before", headers=bearer())).status == 200

    await bus.stop()
    nc = api.server.app[NATS]
    await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
    assert await problem(await api.get("/v1/echo/gone", headers=bearer())) == (
        503,
        "bus-unavailable",
    )
    ready = await api.get("/readyz")
    assert (ready.status, (await ready.json())["services"]["echo"]["error"]) == (503, "NotSent")
    itself = await api.get("/readyz/gateway")
    assert (itself.status, await itself.json()) == (503, {"ready": False, "bus": False})
    keyed = bearer() | {"Idempotency-Key": f"{org}-while-the-bus-is-gone"}
    refused = await api.post("/v1/echo", json={"text": "gone-keyed"}, headers=keyed)
    assert await problem(refused) == (503, "bus-unavailable")

    await bus.start()
    await eventually(lambda: asyncio.sleep(0, nc.is_connected), timeout=20)
    after = await eventually(_answered(api, "/v1/echo/after"), timeout=20)
    assert after == 200
    # The gateway's requests reach the echo in the order it sent them: had one of those
    # refused been held and sent on reconnecting, it would stand before "after".
    assert [r.text for r in echo.handled] == ["before", "after"]
    again = await api.post("/v1/echo", json={"text": "gone-keyed"}, headers=keyed)
    assert (again.status, "Idempotent-Replayed" in again.headers) == (201, False)


async def test_a_gateway_whose_bus_is_gone_stops_cleanly(client_for, gateway_settings, bus):
    settings = msgspec.structs.replace(gateway_settings, nats_url=bus.url, nats_password="")
    api = await client_for(settings, services=(ECHO,), routes=ROUTES)
    nc = api.server.app[NATS]
    await bus.stop()
    await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
    await api.close()  # its cleanup: the connection let go, without an error
    assert nc.is_closed


def _answered(api: TestClient, path: str):
    """The status of a GET once the echo serves again (it reconnects on its own time)."""

    async def status() -> int | None:
        response = await api.get(path, headers=bearer())
        return None if response.status == 503 else response.status

    return status


async def test_a_server_gone_without_a_word_is_left_for_another_in_seconds(
    client_for, gateway_settings, echo, bus
):
    """A node whose machine dies closes no connection: nothing comes back, and with
    nats-py's own pings (every 2 min, two unanswered allowed) the gateway would go on
    asking it for up to six minutes, every request a 504. Its pings are every 5 s, so it
    leaves a silent server within 15 s, for one that answers."""
    link = Link(bus.url)
    async with link as url:
        settings = msgspec.structs.replace(
            gateway_settings, nats_url=url, nats_password="", request_timeout=1.0
        )
        api = await client_for(settings, services=(ECHO,), routes=ROUTES)
        assert (await api.get("/v1/echo/before", headers=bearer())).status == 200
        link.hold()
        assert await problem(await api.get("/v1/echo/held", headers=bearer())) == (
            504,
            "service-timeout",
        )
        nc = api.server.app[NATS]
        await eventually(lambda: asyncio.sleep(0, nc.stats["reconnects"] == 1), timeout=30)
        after = await eventually(_answered(api, "/v1/echo/after"), timeout=10)
        assert after == 200
    assert [r.text for r in echo.handled] == ["before", "after"]
