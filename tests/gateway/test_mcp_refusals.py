"""A refused MCP call is answered within the session, as the call's error, never as an HTTP
error: the SDK's transport takes one for the end of the session, so an agent would lose it
to a moment's outage of the bus, the store or a service, where it should ask again."""

import msgspec
import pytest
from aiohttp import ClientSession as HTTP
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError

from tests.gateway.conftest import ROUTES
from tests.support import ECHO, Bus, bearer, token

JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def bus(tmp_path):
    bus = Bus(tmp_path)
    yield bus
    await bus.stop()


async def test_a_call_refused_while_the_bus_is_gone_is_the_tools_error_and_the_session_goes_on(
    client_for, gateway_settings, bus
):
    settings = msgspec.structs.replace(
        gateway_settings, nats_url=bus.url, nats_password="", request_timeout=1.0
    )
    api = await client_for(settings, services=(ECHO,), routes=ROUTES)
    await bus.stop()
    async with (
        create_mcp_http_client(headers=bearer()) as http,
        streamable_http_client(str(api.make_url("/v1/mcp")), http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        refused = await session.call_tool("mod", {"op": "read_surface"})
        assert refused.isError
        assert refused.structuredContent["type"] == "urn:tether:problem:bus-unavailable"
        assert refused.structuredContent["status"] == 503
        assert [t.name for t in (await session.list_tools()).tools] == ["mod"]  # still there


async def test_a_caller_over_its_rate_is_refused_within_the_session(client_for, gateway_settings):
    settings = msgspec.structs.replace(gateway_settings, rate_limit=3)
    api = await client_for(settings, services=(ECHO,), routes=ROUTES)
    agent = token(user="acme/ada", act="agent:acme/ada")
    async with (
        create_mcp_http_client(headers=bearer(agent)) as http,
        streamable_http_client(str(api.make_url("/v1/mcp")), http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()  # one, and the notification after it two
        await session.list_tools()  # three
        with pytest.raises(McpError) as listing:
            await session.list_tools()
        assert listing.value.error.code == -32000
        assert listing.value.error.data["type"] == "urn:tether:problem:rate-limited"
        calling = await session.call_tool("mod", {"op": "read_surface"})
        assert calling.isError
        assert calling.structuredContent["type"] == "urn:tether:problem:rate-limited"


async def test_params_that_are_not_an_object_are_named(client):
    async with HTTP() as http:
        url = str(client.make_url("/v1/mcp"))
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}
        async with http.post(url, json=call, headers=bearer()) as response:
            assert response.status == 200
            assert (await response.json())["error"] == {
                "code": -32602,
                "message": "params must be an object",
            }


async def test_a_body_nested_too_deep_or_naming_a_key_twice_is_an_invalid_request(client):
    """Before, JSON nested past the decoder's depth was a 500; a key named twice was read as
    whichever came last, where the client's own log may show the first."""
    async with HTTP() as http:
        url = str(client.make_url("/v1/mcp"))
        deep = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": '
        for body, named in (
            (deep + b"[" * 50_000 + b"]" * 50_000 + b"}}", "the body nests deeper than 64"),
            (b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}', "'id' is named twice"),
        ):
            async with http.post(url, data=body, headers=bearer() | JSON) as response:
                assert response.status == 200, named
                reply = await response.json()
                assert (reply["id"], reply["error"]["code"]) == (None, -32600), named
                assert reply["error"]["message"].startswith(named), named


async def test_an_id_that_is_neither_a_string_nor_a_number_is_an_invalid_request(client):
    async with HTTP() as http:
        url = str(client.make_url("/v1/mcp"))
        for id_ in (None, {"a": 1}, [1], True):
            call = {"jsonrpc": "2.0", "id": id_, "method": "ping"}
            async with http.post(url, json=call, headers=bearer()) as response:
                assert await response.json() == {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "id must be a string or a number"},
                }, id_


async def test_arguments_that_are_not_an_object_or_an_op_that_is_not_a_name_are_the_tools_error(
    client,
):
    """Before, each was a 500: a string or a number of `arguments` was no dict, and a list
    of `op` no key of the tool's ops. A list of pairs was taken as if it were the object."""
    async with HTTP() as http:
        url = str(client.make_url("/v1/mcp"))
        for arguments, named in (
            ("x", "arguments must be an object"),
            (5, "arguments must be an object"),
            ([["op", "read_surface"]], "arguments must be an object"),
            ({"op": ["read_surface"]}, "op must be one of"),
            ({"op": {"a": 1}}, "op must be one of"),
        ):
            params = {"name": "mod", "arguments": arguments}
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            async with http.post(url, json=call, headers=bearer()) as response:
                assert response.status == 200, arguments
                result = (await response.json())["result"]
                assert result["isError"], arguments
                assert result["content"][0]["text"].startswith(named), arguments


async def test_a_protocol_version_this_server_does_not_speak_is_a_400(client):
    """The transport's rule: after initialize, each request carries the version the session
    agreed; one the server does not speak is refused, never answered as another."""
    async with HTTP() as http:
        url = str(client.make_url("/v1/mcp"))
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for version in ("1900-01-01", "not-a-version"):
            headers = bearer() | {"MCP-Protocol-Version": version}
            async with http.post(url, json=ping, headers=headers) as response:
                assert response.status == 400, version
                error = (await response.json())["error"]
                assert error["code"] == -32600
                assert error["message"].startswith(f"MCP-Protocol-Version {version!r} is not one")
            initialize = {
                "jsonrpc": "2.0", "id": 2, "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}},
            }  # fmt: skip
            async with http.post(url, json=initialize, headers=headers) as response:
                agreed = (await response.json())["result"]["protocolVersion"]
                assert response.status == 200 and agreed == "2025-11-25"
        headers = bearer() | {"MCP-Protocol-Version": "2025-06-18"}
        async with http.post(url, json=ping, headers=headers) as response:
            assert response.status == 200 and (await response.json())["result"] == {}


async def test_a_clients_answer_is_taken_and_not_answered(client):
    async with HTTP() as http:
        url = str(client.make_url("/v1/mcp"))
        for message in (
            {"jsonrpc": "2.0", "id": 7, "result": {}},
            {"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}},
        ):
            async with http.post(url, json=message, headers=bearer()) as response:
                assert (response.status, await response.read()) == (202, b""), message


async def test_the_sdk_sends_the_version_it_agreed_and_is_answered(client):
    async with (
        create_mcp_http_client(headers=bearer(token(user="acme/ada", act="agent:acme/ada"))) as h,
        streamable_http_client(str(client.make_url("/v1/mcp")), http_client=h) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        agreed = await session.initialize()
        assert agreed.protocolVersion in ("2025-11-25", "2025-06-18")
        assert [t.name for t in (await session.list_tools()).tools] == ["mod"]
