"""The bus: a replica that starts before its server waits for it, and a subscription once
`flushed` is at the server, so a service that says it serves has its responders."""

import asyncio
import functools
import logging

import pytest
from nats.errors import NoRespondersError
from nats.js.errors import KeyNotFoundError

from libs.contracts.permissions import GATEWAY
from libs.contracts.principal import Principal
from libs.contracts.problem import Unavailable
from libs.runtime import bus
from libs.runtime.calls import call
from libs.runtime.kv import current
from libs.runtime.service import Service
from libs.runtime.settings import Settings
from libs.stack.processes import stop_all
from libs.stack.servers import free_port, start_nats
from tests.personal.conftest import eventually
from tests.support import ECHO, SAY, Bus, Echo, Say, deaf_once, running


async def test_the_first_connect_is_retried_until_a_server_is_there(tmp_path, caplog):
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    caplog.set_level(logging.WARNING, logger=bus.__name__)
    nc, connecting = await bus.connecting(url, user="", password="", name="early")
    async with asyncio.timeout(10):  # refused twice, and still trying
        while _refusals(caplog) < 2:  # noqa: ASYNC110 (its log is the only sign of a try)
            await asyncio.sleep(0.05)
    assert not connecting.done() and not nc.is_connected
    config = {"listen": f"127.0.0.1:{port}", "http": f"127.0.0.1:{free_port()}"}
    server = await asyncio.to_thread(start_nats, config, tmp_path / "nats.json")
    try:
        await asyncio.wait_for(connecting, 10)
        assert nc.is_connected
        await nc.close()
    finally:
        stop_all([server])


def _refusals(caplog) -> int:
    return sum("ConnectionRefused" in getattr(r, "error", "") for r in caplog.records)


async def test_a_subscription_flushed_is_at_the_server_before_anything_is_asked(connect):
    """With nats-py's own flush alone, 11 and 14 of 300 requests sent at once here found no
    responder or were lost: the flush was answered before the server had the subscription."""
    missed = 0

    async def answer(msg) -> None:
        await msg.respond(b"{}")

    async with connect("echo") as served, connect(GATEWAY) as asking:
        for _ in range(300):
            sub = await served.subscribe("tether.echo.say", queue="echo", cb=answer)
            await bus.flushed(served)
            try:
                await asking.request("tether.echo.say", b"{}", timeout=2)
            except (NoRespondersError, TimeoutError):
                missed += 1
            await sub.unsubscribe()
    assert missed == 0


async def test_a_service_whose_bus_is_gone_stops_cleanly(tmp_path):
    """Stopped while its server is away, a service has no interest at a server to take back
    and no reply it could send: it closes, rather than wait on each subscription's drain
    for a server that is not there and then raise."""
    bus = Bus(tmp_path)
    try:
        settings = Settings(service="echo", nats_url=bus.url, metrics_port=0)
        async with Service(ECHO, settings, signals=False) as svc:
            serving = asyncio.create_task(svc.serve({SAY: Echo("r1").say}))
            await svc.serving.wait()
            await bus.stop()
            await eventually(lambda: asyncio.sleep(0, not svc.nc.is_connected))
            svc.stop()
            await serving
        assert svc.nc.is_closed
    finally:
        await bus.stop()


async def test_a_first_connect_that_drops_a_cancel_is_cancelled_again():
    """On Python 3.11 a cancel that comes as nats-py's dial is refused is dropped: the
    dial's `wait_for` returns the refusal, and nats-py tries the next server. A process
    stopped at that moment waited on its connect for ever (a gateway started in an outage,
    SIGTERM'd, was killed after 10 s in CI). The race is a few microseconds wide, so the
    connect here is a task that drops its first cancel as that one does; `let_go` stops it
    all the same."""
    nc, dialing = await bus.connecting(
        f"nats://127.0.0.1:{free_port()}", user="", password="", name="stopped"
    )
    dialing.cancel()
    heard: list[asyncio.CancelledError] = []
    nc.first_connect = asyncio.create_task(deaf_once(heard))
    await asyncio.sleep(0)
    stopping = asyncio.create_task(bus.let_go(nc))
    # Waited on without a cancel of its own, which would reach the connect and end it.
    done, _ = await asyncio.wait({stopping}, timeout=5)
    if not done:
        stopping.cancel()
    assert done, "let_go still waiting on the connect 5 s on"
    assert nc.first_connect.cancelled() and len(heard) == 2
    assert nc.is_closed


async def test_a_call_made_while_the_bus_is_gone_is_unavailable_and_never_sent(tmp_path):
    """A service's call to another, made while its server is away, is refused at once as
    transient (a reader asks again) and is not held to run when the server is back."""
    server, echo = Bus(tmp_path), Echo("r1")
    ada = Principal(org="acme", sub="acme/ada")
    settings = Settings(service="echo", nats_url=server.url, metrics_port=0)
    try:
        async with running(ECHO, settings, lambda _: {SAY: echo.say}) as served:
            nc = await _connected(server.url, "caller")
            ask = functools.partial(call, nc, SAY, caller="caller", principal=ada, timeout=1)
            await ask(Say(text="before"))
            await server.stop()
            await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
            with pytest.raises(Unavailable) as gone:
                await ask(Say(text="gone"))
            assert gone.value.problem.rule == "bus-unavailable"

            await server.start()
            connected = (nc, served.nc)
            await eventually(lambda: asyncio.sleep(0, all(c.is_connected for c in connected)))
            await eventually(lambda: _answered(ask, Say(text="after")), timeout=20)
            # One connection's requests reach the echo in order: a "gone" held and sent on
            # reconnecting would stand before "after".
            assert [r.text for r in echo.handled] == ["before", "after"]
            await nc.close()
    finally:
        await server.stop()


async def _answered(ask, request: Say) -> bool:
    try:
        await ask(request)
    except Unavailable:  # the echo's own connection may be a moment behind
        return False
    return True


async def test_a_write_made_while_the_bus_is_gone_is_refused_at_once_and_never_lands(tmp_path):
    """A KV write is a JetStream publish, which is a request. Made while the connection was
    away, nats-py held it, its handler was told it timed out (a change that failed, so
    recorded), and it was stored once the server was back. Now it is not sent at all."""
    server = Bus(tmp_path)
    nc = await _connected(server.url, "writer")
    try:
        kv = await nc.jetstream().create_key_value(bucket="held", history=1)
        await server.stop()
        await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
        with pytest.raises(bus.NotSent):
            await kv.put("gone", b"made while the bus was gone")
        with pytest.raises(bus.NotSent):  # a read too: held, it would wait out its time
            await current(kv, "gone")

        await server.start()
        await eventually(lambda: asyncio.sleep(0, nc.is_connected), timeout=20)
        # Stored after anything this connection held, as one connection's publishes are.
        await eventually(lambda: _stored(kv, "after"), timeout=20)
        with pytest.raises(KeyNotFoundError):
            await kv.get("gone")
    finally:
        await nc.close()
        await server.stop()


async def _stored(kv, key: str) -> bool:
    try:
        await kv.put(key, b"made once the bus was back")
    except (bus.NotSent, TimeoutError):  # the stream's leader may be a moment behind
        return False
    return True


async def _connected(url: str, name: str):
    nc, first = await bus.connecting(url, user="", password="", name=name)
    await first
    return nc
