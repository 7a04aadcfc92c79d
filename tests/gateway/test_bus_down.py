"""The gateway while its NATS server is gone: a request is refused 503 at once and never
sent, so it cannot run later, when the bus is back and its client has long given up."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from aiohttp import ClientSession
from aiohttp.test_utils import TestClient

from libs.runtime.settings import Settings
from libs.stack.servers import free_port
from services.gateway.app import NATS
from services.gateway.routes import ROUTES as TETHER_ROUTES
from tests.gateway.conftest import ROUTES
from tests.personal.conftest import eventually, problem
from tests.support import (
    ECHO,
    KEY,
    SAY,
    Bus,
    Echo,
    Link,
    answers,
    bearer,
    module_process,
    running,
    status_of,
    stopped_cleanly,
)

# The routes that hold a stream open on the bus: each subscribes, or watches, as it opens.
STREAMING = tuple(r for r in TETHER_ROUTES if r.kind in ("stream", "pending_stream", "watch"))


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
    gone = await api.get("/v1/echo/gone", headers=bearer())
    assert await problem(gone) == (503, "bus-unavailable")
    assert gone.headers["Retry-After"] == "1"  # transient: ask again in a second
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


async def test_a_gateway_started_before_its_bus_answers_at_once_and_serves_once_it_comes(
    client_for, gateway_settings, bus
):
    """Started in a NATS outage, the gateway listens once it has waited FIRST_CONNECT_S:
    alive, not ready, and a 503 for whatever needs the bus, streams included, for nothing
    subscribed before a first connect would be heard. Before, it opened no port until a
    server was there."""
    await bus.stop()
    settings = msgspec.structs.replace(
        gateway_settings, nats_url=bus.url, nats_password="", request_timeout=1.0
    )
    api = await asyncio.wait_for(
        client_for(settings, services=(ECHO,), routes=ROUTES + STREAMING), timeout=30
    )
    assert (await api.get("/healthz")).status == 200
    itself = await api.get("/readyz/gateway")
    assert (itself.status, await itself.json()) == (503, {"ready": False, "bus": False})
    for path in (
        "/v1/echo/early",
        "/v1/rooms/room-0123456789abcdef/messages/stream",
        "/v1/pending/stream",
        "/v1/mod/watch",
    ):
        async with asyncio.timeout(10):  # a stream opened would never end
            refused = await problem(await api.get(path, headers=bearer()))
        assert refused == (503, "bus-unavailable"), path

    await bus.start()
    echo = Echo("r1")
    echo_settings = Settings(service="echo", nats_url=bus.url, metrics_port=0)
    async with running(ECHO, echo_settings, lambda _: {SAY: echo.say}):
        after = await eventually(_answered(api, "/v1/echo/after"), timeout=20)
        assert after == 200
        assert (await api.get("/readyz/gateway")).status == 200
    assert [r.text for r in echo.handled] == ["after"]


async def test_a_gateway_process_that_never_reached_its_bus_stops_cleanly_on_sigterm(
    tmp_path, gateway_settings
):
    """Its probes answer while it waits, and SIGTERM ends it at once with status 0: the
    connect still trying is cancelled, not waited on."""
    port = free_port()
    env = {
        "TETHER_PORT": str(port),
        "NATS_URL": f"nats://127.0.0.1:{free_port()}",
        "REDIS_URL": gateway_settings.redis_url,
        "TETHER_JWT_KEY": KEY,
        "TETHER_HOME": str(tmp_path),
        "TETHER_METRICS_PORT": "0",  # not 9100, which another test process may hold
    }
    async with (
        module_process("services.gateway.main", env) as gateway,
        ClientSession(f"http://127.0.0.1:{port}") as http,
    ):
        # Alive and listening, though its bus is not there.
        await eventually(answers(http, "/healthz", 200), timeout=20)
        assert await status_of(http, "/readyz/gateway") == 503
        asked = await http.get("/v1/agents/me", headers=bearer())
        assert await problem(asked) == (503, "bus-unavailable")
        await stopped_cleanly(gateway)


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


async def test_a_watch_whose_bus_goes_as_it_begins_is_refused_503(bus):
    """The watch checks the connection as it opens; one lost a moment later, while its
    watchers begin, is the same 503, never a 500."""
    from libs.contracts.mod import LAYERS_BUCKET
    from libs.contracts.problem import Refused
    from libs.runtime.bus import connecting
    from services.gateway.watch import _watching

    nc, first = await connecting(bus.url, user="", password="", name="watcher")
    await first
    try:
        await bus.stop()
        await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
        with pytest.raises(Refused) as refused:
            await _watching(nc.jetstream(), [(LAYERS_BUCKET, "user", "acme.user.ada")], 1.0)
        assert refused.value.problem.rule == "watch-unavailable"
    finally:
        await nc.close()
