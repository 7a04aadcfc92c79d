"""hip-0528 §9.5's tool through the official MCP Python SDK, as a real client would call it:
one tool, `mod`, whose ops are admitted by the same rules as their routes."""

import json
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.mod.conftest import HIDE_BOARD, keep

OPS = {"read_surface", "read_layer", "list_versions", "patch_layer", "revert_layer",
       "commit_draft", "discard_draft"}  # fmt: skip


async def test_hip0528_09_5_the_mod_tool_is_admitted_by_the_same_rules_as_its_routes(api, people):
    url = str(api.make_url("/v1/mcp"))
    async with (
        create_mcp_http_client(headers=people.agent) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["mod"]
        assert set(tools[0].inputSchema["properties"]["op"]["enum"]) == OPS
        surface = await session.call_tool("mod", {"op": "read_surface"})
        assert not surface.isError and len(surface.structuredContent["order"]) == 15
        patched = await session.call_tool(
            "mod", {"op": "patch_layer", "layer": "user", "base": 0, "ops": [HIDE_BOARD]}
        )
        assert not patched.isError, patched.content
        draft = patched.structuredContent["draft"]
        assert draft["state"] == "open" and "your level is draft" in draft["waits"]
        refused = await session.call_tool("mod", {"op": "commit_draft", "id": draft["id"]})
        assert refused.isError
        assert json.loads(refused.content[0].text)["type"].endswith(":may-not-keep")
        unknown = await session.call_tool("mod", {"op": "patch_layer", "layer": "user"})
        assert unknown.isError
    assert (await keep(api, people.ada, draft["id"])).status == 200


@asynccontextmanager
async def _session(url: str, headers: dict[str, str]):
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_a_write_called_again_with_its_key_is_answered_as_it_was_and_made_once(api, people):
    """A host that lost a call's answer calls again with the same Idempotency-Key, in a new
    session as after a dropped connection: the agent's one draft, not a second one."""
    url = str(api.make_url("/v1/mcp"))
    keyed = {**people.agent, "Idempotency-Key": "hide-the-board"}
    hide = {"op": "patch_layer", "layer": "user", "base": 0, "ops": [HIDE_BOARD]}
    made = []
    for _ in range(2):
        async with _session(url, keyed) as session:  # initialize is not a write: not keyed
            patched = await session.call_tool("mod", hide)
            assert not patched.isError, patched.content
            made.append(patched.structuredContent["draft"]["id"])
    assert made[0] == made[1]
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert [d["id"] for d in listed["drafts"]] == made[:1]
    async with _session(url, keyed) as session:
        another = await session.call_tool("mod", {**hide, "note": "and another"})
        assert another.isError
        assert another.structuredContent["type"].endswith(":idempotency-key-reused")
        read = await session.call_tool("mod", {"op": "read_layer", "layer": "user"})
        assert not read.isError, read.content  # a read is not a write: the key is not its


async def test_a_key_the_document_refuses_is_refused_before_the_message_is_read(api, people):
    """As a keyed route refuses it: 400, naming what a key may be, whatever the body."""
    for body in (b"not json", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})):
        refused = await api.post(
            "/v1/mcp", data=body, headers={**people.agent, "Idempotency-Key": "clé"}
        )
        assert refused.status == 400
        problem = await refused.json(content_type=None)
        assert problem["type"].endswith(":idempotency-key-invalid")
        assert "printable ASCII" in problem["detail"]


async def test_each_call_of_one_session_runs_once_under_its_own_key(api, people):
    """A host sets headers once for its session, so one header key would make its second
    write that session's key used again. Each call names its own key in its `_meta` (the
    SDK's `meta=`): called again in the session, it is answered as it was, saying so; the
    next call, under its own key, is made; the same key with another call is refused."""
    url = str(api.make_url("/v1/mcp"))
    hide = {"op": "patch_layer", "layer": "user", "base": 0, "ops": [HIDE_BOARD]}
    rename = {**hide, "ops": [{"op": "rename", "kind": "apps", "id": "hanzo/chat/chat",
                               "title": "Talk"}]}  # fmt: skip
    async with _session(url, people.agent) as session:
        first = await session.call_tool("mod", hide, meta={"tether/idempotency-key": "call-1"})
        again = await session.call_tool("mod", hide, meta={"tether/idempotency-key": "call-1"})
        other = await session.call_tool("mod", rename, meta={"tether/idempotency-key": "call-2"})
        reused = await session.call_tool("mod", rename, meta={"tether/idempotency-key": "call-1"})
        bad = await session.call_tool("mod", rename, meta={"tether/idempotency-key": "clé"})
    assert not first.isError and not again.isError and not other.isError, first.content
    assert again.structuredContent == first.structuredContent
    assert (again.meta or {}).get("tether/idempotent-replayed") is True
    assert (first.meta or {}).get("tether/idempotent-replayed") is None
    assert other.structuredContent["draft"]["id"] != first.structuredContent["draft"]["id"]
    assert reused.isError and reused.structuredContent["type"].endswith(":idempotency-key-reused")
    assert bad.isError and bad.structuredContent["type"].endswith(":idempotency-key-invalid")
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert len(listed["drafts"]) == 2
