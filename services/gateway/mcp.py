"""`POST /v1/mcp`: the mod capability as one MCP tool, `mod` (hip-0528 §9.5).

JSON-RPC 2.0 over the streamable HTTP transport, answered as plain JSON and holding no
session: `initialize`, `ping`, `tools/list` and `tools/call`. Each op of the tool is the
subject its route forwards to, asked with the caller's own principal, so it is admitted by
the same function as the route: an agent's patch_layer lands as a draft, its commit_draft
is refused. The watch stream is not a tool.

A call that writes (patch_layer, revert_layer, commit_draft, discard_draft) sent with a key
runs once per caller and key, as a keyed POST to its route does: a host that lost the answer
sends the call again with the key, in this session or another, and is answered as it was.
The key is the call's own `_meta["tether/idempotency-key"]`, which a host sets per call (the
SDK's `call_tool(..., meta=...)`), else the request's `Idempotency-Key` header, which most
hosts set per session. A replayed answer says so in its `_meta` and in a header.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from aiohttp import web

from libs.contracts import codec, mod
from libs.contracts.principal import Principal
from libs.contracts.problem import Problem, Refused
from libs.contracts.registry import Subject
from services.gateway.forward import (
    NATS,
    answered_once,
    ask,
    counted,
    refuse_unclear,
    scoped_key,
)
from services.gateway.limits import IdempotencyKeys, RateLimiter, Stored, checked_key
from services.gateway.org_agents import standing
from services.gateway.tokens import is_delegate, principal_from

__all__ = ["PROTOCOL_VERSIONS", "TOOL", "mcp_endpoint"]

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# Each op of the tool, and the subject its route forwards to.
_OPS: dict[str, Subject] = {
    "read_surface": mod.SURFACE,
    "read_layer": mod.LAYER,
    "list_versions": mod.VERSIONS,
    "patch_layer": mod.WRITE,
    "revert_layer": mod.REVERT,
    "commit_draft": mod.KEEP,
    "discard_draft": mod.DISCARD,
}
# The ops whose routes are a POST or a DELETE, which a key makes run once.
_WRITES = frozenset({mod.WRITE, mod.REVERT, mod.KEEP, mod.DISCARD})
_OP_SCHEMA = msgspec.json.schema(mod.Op)
TOOL = {
    "name": "mod",
    "title": "Arrange the app",
    "description": (
        "Read the surface and the layers of the caller's app, and change them with patches. "
        "An agent's patch_layer is held as a draft for its person's Keep unless their level "
        "lets it act unasked; an agent never commits a draft."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "op": {"enum": list(_OPS)},
            "layer": {"enum": ["org", "user"]},
            "base": {"type": "integer", "minimum": 0},
            "version": {"type": "integer", "minimum": 0},
            "before": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": 64},
            "ops": {"type": "array", "items": _OP_SCHEMA, "maxItems": 64},
            "note": {"type": "string", "maxLength": 200},
            "draft": {"type": "boolean"},
            "id": {"type": "string"},
        },
        "required": ["op"],
        "additionalProperties": False,
    },
}
_decode = msgspec.json.Decoder().decode
_REFUSED = -32000  # JSON-RPC's first server-defined code: a request refused, its problem the data
KEY_META, REPLAYED_META = "tether/idempotency-key", "tether/idempotent-replayed"


def mcp_endpoint(
    *, key: str, limiter: RateLimiter, keys: IdempotencyKeys, timeout: float, late_timeout: float
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(http: web.Request) -> web.Response:
        authorization = http.headers.get("Authorization")
        principal = principal_from(authorization, key)
        # Every request counted, first: a removed org agent's token sent on and on costs a
        # bus read each only up to its rate. Over it, the refusal is answered in the
        # session (below), and nothing is read.
        try:
            await counted(http, limiter, principal)
            over: Refused | None = None
        except Refused as exc:
            over = exc
        if over is None:
            await standing(http.app[NATS], principal, authorization, key)
        if is_delegate(principal):
            raise Refused("delegate-not-admitted", 403, "only the person's own agent arranges it")
        if (idempotency_key := http.headers.get("Idempotency-Key")) is not None:
            checked_key(idempotency_key)  # refused as a keyed route refuses it
        raw = await http.read()
        try:
            refuse_unclear(raw)
            message = _decode(raw)
        except Refused as exc:
            return _reply(None, error=(-32600, exc.problem.detail))
        except msgspec.DecodeError:
            return _reply(None, error=(-32700, "the body is not JSON"))
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _reply(None, error=(-32600, "a JSON-RPC 2.0 request object is expected"))
        replied = "method" not in message and ("result" in message or "error" in message)
        if "id" not in message or replied:
            # A notification, or a client's answer: this server asks nothing, so nothing
            # waits on one, and nothing is answered (the transport's 202).
            return web.Response(status=202)
        id_, method, params = message["id"], message.get("method"), message.get("params") or {}
        version = http.headers.get("MCP-Protocol-Version")
        if version is not None and version not in PROTOCOL_VERSIONS and method != "initialize":
            # The transport's rule: the version a session agreed is sent on each request
            # after initialize; one this server does not speak is a 400, never read as another.
            supported = ", ".join(PROTOCOL_VERSIONS)
            return _reply(
                None,
                error=(-32600, f"MCP-Protocol-Version {version!r} is not one of {supported}"),
                status=400,
            )
        if isinstance(id_, bool) or not isinstance(id_, str | int | float):  # MCP: never null
            return _reply(None, error=(-32600, "id must be a string or a number"))
        if not isinstance(params, dict):
            return _reply(id_, error=(-32602, "params must be an object"))
        try:
            if over is not None:
                raise over
            return await answer(http, principal, id_, method, params)
        except Refused as exc:
            # Answered within the session: a client's transport takes an HTTP error for the
            # end of its session (the SDK's does), where this is one call refused, often
            # for a moment (the bus, the store, a service away), and the caller asks again.
            if method == "tools/call":
                refusal = msgspec.json.encode(exc.problem)
                return _reply(id_, result=_tool_result(refusal, is_error=True))
            return _reply(id_, error=(_REFUSED, exc.problem.detail), data=exc.problem)

    async def answer(
        http: web.Request, principal: Principal, id_: Any, method: Any, params: dict
    ) -> web.Response:
        match method:
            case "initialize":
                asked = params.get("protocolVersion")
                version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
                return _reply(
                    id_,
                    result={
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": False}},
                        "serverInfo": {"name": "tether", "version": "0.1.0"},
                    },
                )
            case "ping":
                return _reply(id_, result={})
            case "tools/list":
                return _reply(id_, result={"tools": [TOOL]})
            case "tools/call":
                if params.get("name") != "mod":
                    return _reply(id_, error=(-32602, f"no tool {params.get('name')!r}"))
                arguments = params.get("arguments") or {}
                if not isinstance(arguments, dict):
                    return _reply(id_, result=_tool_error("arguments must be an object"))
                op = arguments.get("op")
                if not isinstance(op, str) or op not in _OPS:
                    return _reply(id_, result=_tool_error(f"op must be one of {list(_OPS)}"))
                arguments = {k: v for k, v in arguments.items() if k != "op"}
                subject = _OPS[op]
                try:
                    payload = codec.encode(msgspec.convert(arguments, subject.request))
                except msgspec.ValidationError as exc:
                    return _reply(id_, result=_tool_error(f"{op}: {exc}"))
                meta = params.get("_meta")
                key = meta.get(KEY_META) if isinstance(meta, dict) else None
                if key is not None and not isinstance(key, str):
                    return _reply(id_, result=_tool_error(f"_meta {KEY_META} must be a string"))
                outcome, replayed = await call(http, principal, subject, op, payload, key)
                result = _tool_result(outcome.body, is_error=outcome.status != 200)
                if replayed:
                    result["_meta"] = {REPLAYED_META: True}
                response = _reply(id_, result=result)
                if replayed:
                    response.headers["Idempotent-Replayed"] = "true"
                return response
        return _reply(id_, error=(-32601, f"no method {method!r}"))

    async def call(
        http: web.Request,
        principal: Principal,
        subject: Subject,
        op: str,
        payload: bytes,
        key: str | None,
    ) -> tuple[Stored, bool]:
        """The op's answer (its status, 200 or the problem's, and its body), and whether it
        replays an earlier one. `key`: the call's own, over the request's header."""
        idempotency_key = key if key is not None else http.headers.get("Idempotency-Key")
        keyed = subject in _WRITES and idempotency_key is not None

        async def asked(wait: float) -> Stored:
            problem, body = await ask(
                http.app[NATS], subject, payload, principal, timeout=wait,
                key=scoped_key(principal, idempotency_key) if keyed else None,
            )  # fmt: skip
            return Stored("", problem or 200, body)

        if not keyed:
            return await asked(timeout), False
        return await answered_once(
            keys, principal, idempotency_key, keys.fingerprint("MCP", op, payload), asked,
            subject=subject, timeout=timeout, late_timeout=late_timeout,
        )  # fmt: skip

    return handler


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _tool_result(body: bytes, *, is_error: bool) -> dict[str, Any]:
    """A reply or a problem, as the tool's text and its structured content."""
    return {
        "content": [{"type": "text", "text": body.decode()}],
        "structuredContent": _decode(body),
        "isError": is_error,
    }


def _reply(
    id_: Any,
    *,
    result: Any = None,
    error: tuple[int, str] | None = None,
    data: Problem | None = None,
    status: int = 200,
) -> web.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        body["error"] = {"code": error[0], "message": error[1]}
        if data is not None:
            body["error"]["data"] = data
    else:
        body["result"] = result
    return web.Response(
        body=msgspec.json.encode(body), status=status, content_type="application/json"
    )
