"""A replica that starts before its server waits for it (nats-py alone gives up)."""

import asyncio

from libs.runtime import bus
from libs.stack.processes import stop_all
from libs.stack.servers import free_port, start_nats


async def test_the_first_connect_is_retried_until_a_server_is_there(tmp_path):
    port = free_port()
    url = f"nats://127.0.0.1:{port}"
    connecting = asyncio.create_task(bus.connect(url, user="", password="", name="early"))
    await asyncio.sleep(0.6)
    assert not connecting.done()
    config = {"listen": f"127.0.0.1:{port}", "http": f"127.0.0.1:{free_port()}"}
    server = await asyncio.to_thread(start_nats, config, tmp_path / "nats.json")
    try:
        nc = await asyncio.wait_for(connecting, 10)
        assert nc.is_connected
        await nc.close()
    finally:
        stop_all([server])
