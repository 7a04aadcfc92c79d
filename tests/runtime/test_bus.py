"""A replica that starts before its server waits for it (nats-py alone gives up)."""

import asyncio
import logging

from libs.runtime import bus
from libs.stack.processes import stop_all
from libs.stack.servers import free_port, start_nats


async def test_the_first_connect_is_retried_until_a_server_is_there(tmp_path, caplog):
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    caplog.set_level(logging.WARNING, logger=bus.__name__)
    connecting = asyncio.create_task(bus.connect(url, user="", password="", name="early"))
    async with asyncio.timeout(10):  # refused twice, and still trying
        while _refusals(caplog) < 2:  # noqa: ASYNC110 (its log is the only sign of a try)
            await asyncio.sleep(0.05)
    assert not connecting.done()
    config = {"listen": f"127.0.0.1:{port}", "http": f"127.0.0.1:{free_port()}"}
    server = await asyncio.to_thread(start_nats, config, tmp_path / "nats.json")
    try:
        nc = await asyncio.wait_for(connecting, 10)
        assert nc.is_connected
        await nc.close()
    finally:
        stop_all([server])


def _refusals(caplog) -> int:
    return sum("ConnectionRefused" in getattr(r, "error", "") for r in caplog.records)
