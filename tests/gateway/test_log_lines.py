"""The gateway process's log lines: at the level and under the replica name its environment
gives, and a request that is not HTTP logged as the client's fault, never as its own."""

import asyncio

from aiohttp import ClientSession

from libs.contracts.permissions import GATEWAY
from libs.stack.servers import free_port
from tests.personal.conftest import eventually
from tests.support import KEY, answers, module_process, stopped

# A token with a NUL after it: not HTTP, and a secret aiohttp would quote.
NUL_IN_A_TOKEN = b"Authorization: Bearer s3cr3t\x00"


async def _gateway_lines(stack, tmp_path, level: str, header: bytes = NUL_IN_A_TOKEN) -> list[dict]:
    """Every line a gateway process at `level` logged, sent one request with `header`
    (answered 400), then SIGTERM (exit status 0)."""
    port = free_port()
    env = {
        "TETHER_PORT": str(port),
        "NATS_URL": stack.nats_url,
        "NATS_USER": GATEWAY,
        "NATS_PASSWORD": stack.passwords[GATEWAY],
        "REDIS_URL": stack.redis_url,
        "TETHER_JWT_KEY": KEY,
        "TETHER_HOME": str(tmp_path),
        "TETHER_LOG_LEVEL": level,
        "TETHER_REPLICA": "gateway-under-test",
        # Its own, or two of these tests at once (one in each test process) meet on 9100.
        "TETHER_METRICS_PORT": "0",
    }
    async with (
        module_process("services.gateway.main", env) as gateway,
        ClientSession(f"http://127.0.0.1:{port}") as http,
    ):
        await eventually(answers(http, "/readyz/gateway", 200), timeout=20)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: tether\r\n" + header + b"\r\n\r\n")
        await writer.drain()
        answer = await reader.read()  # the server closes the connection it could not parse
        writer.close()
        lines = await stopped(gateway)
    assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request"), answer
    return lines


async def test_a_request_that_is_not_http_is_logged_as_a_warning_naming_it(stack, tmp_path):
    lines = await _gateway_lines(stack, tmp_path, "INFO")
    faults = [line for line in lines if line["logger"] == "aiohttp.server"]
    assert len(faults) == 1, lines
    assert faults[0]["level"] == "warning"
    assert faults[0]["msg"].endswith("refused 400: Invalid header value char"), faults
    assert "s3cr3t" not in str(lines)  # aiohttp quotes the header beneath its reason
    assert "exc" not in faults[0]
    assert not [line for line in lines if line["level"] == "error"], lines
    assert lines[-1]["msg"] == "stopped"


async def test_the_gateway_logs_at_its_level_under_its_replica_name(stack, tmp_path):
    lines = await _gateway_lines(stack, tmp_path, "WARNING")
    # The refused request's warning, and nothing below its level. A connect slow on a busy
    # machine may add a warning of its own (a first dial timed out and tried again).
    assert [line["logger"] for line in lines].count("aiohttp.server") == 1, lines
    assert {line["level"] for line in lines} == {"warning"}, lines
    assert {line["replica"] for line in lines} == {"gateway-under-test"}


async def test_a_header_too_long_to_read_is_logged_without_its_bytes(stack, tmp_path):
    header = b"Cookie: session=s3cr3t" + b"a" * 9000
    lines = await _gateway_lines(stack, tmp_path, "INFO", header)
    (fault,) = [line for line in lines if line["logger"] == "aiohttp.server"]
    assert fault["msg"].endswith("refused 400: Got more than 8190 bytes when reading"), fault
    assert "s3cr3t" not in str(lines)
