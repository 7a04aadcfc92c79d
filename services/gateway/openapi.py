"""The OpenAPI 3.1 document, generated from the route table and the contracts' schemas."""

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from libs.contracts.problem import Problem
from services.gateway.forward import KEYED
from services.gateway.limits import IDEMPOTENCY_KEY, WINDOW_S
from services.gateway.middlewares import RATE_POLICY, REALM, REQUEST_ID
from services.gateway.pages import PAGES, SCRIPTS
from services.gateway.routes import LOCATED, Route

__all__ = ["openapi"]

_REF = "#/components/schemas/{name}"
_JSON = "application/json"
_PROBLEM = {"application/problem+json": {"schema": {"$ref": _REF.format(name="Problem")}}}
# One server-sent event of a room's stream: its id is the message's seq, its data the
# message as JSON (comments keep the connection and carry no event).
_EVENT = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"const": "message"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"$ref": _REF.format(name="Message")},
        },
    },
    "required": ["id", "data"],
}


# What holds for every operation, said once where a client's reader starts.
_ABOUT = (
    "The authority plane for AI agents that act for people: who an agent is, what it may "
    "send without its person, what it may change in their app and do with their money. "
    "Every operation but the probes, this document, the console's pages and the carriers' "
    "webhooks takes `Authorization: Bearer <token>` (a JWT naming the org, the person "
    "and, for an agent, `act`); what "
    "it reads and changes is the caller's own. A refusal is `application/problem+json` "
    "whose `type` is `urn:tether:problem:<name>` and whose `detail` (and `errors`) say "
    "what was wrong; asking again gets the same answer. A 503, or a 429 over a rate, is "
    "transient: ask again after its `Retry-After`. A POST sent with an `Idempotency-Key` "
    "runs once for the caller and key, and its retry is answered as the first was."
)


def openapi(routes: Sequence[Route], *, version: str) -> dict[str, Any]:
    types = {Problem, *(t for r in routes for t in (r.subject.request, r.subject.reply))}
    _, schemas = msgspec.json.schema_components(
        sorted(types, key=lambda t: t.__name__), ref_template=_REF
    )
    paths: dict[str, dict[str, Any]] = {
        "/healthz": {"get": _plain("The gateway process is up.")},
        "/readyz": {
            "get": _plain("Every service answers its health subject over the bus.", unready=True)
        },
        "/readyz/{service}": {
            "get": {
                **_plain(
                    "That service answers its health subject over the bus; `gateway`: this"
                    " gateway is on the bus (its own readiness, apart from the services').",
                    unready=True,
                    unknown=True,
                ),
                "parameters": [
                    {
                        "name": "service",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
            }
        },
        "/v1/openapi.json": {"get": _plain("This document.")},
        "/v1/mcp": {
            "post": {
                **_plain(
                    "MCP (JSON-RPC 2.0, streamable HTTP answered as JSON): one tool, `mod`, "
                    "whose ops are admitted by the same rules as their routes."
                ),
                "security": [{"bearer": []}],
                "parameters": [_IDEMPOTENCY_KEY_PARAMETER],
                "responses": {
                    "200": {
                        "description": "a JSON-RPC 2.0 response",
                        "headers": _RATE_HEADERS,
                        "content": {_JSON: {}},
                    },
                    "202": {"description": "a notification, taken", "headers": _RATE_HEADERS},
                    "default": {
                        "description": "a problem naming what was wrong",
                        "content": _PROBLEM,
                    },
                },
            }
        },
    }
    for path, what in PAGES.items():
        paths[path] = {"get": _plain(what, "text/html")}
    for path, what in SCRIPTS.items():
        paths[path] = {"get": _plain(what, "text/javascript")}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, schemas)
    for route in routes:
        if route.location is not None:
            _link(route, paths[route.path][route.method.lower()], routes)
    tags = _name_and_tag(paths)
    return {
        "openapi": "3.1.0",
        "info": {"title": "tether", "version": version, "description": _ABOUT},
        "tags": [{"name": t, **({"description": _AREAS[t]} if t in _AREAS else {})} for t in tags],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
        "security": [{"bearer": []}],
    }


_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before asking again",
        "schema": {"type": "integer", "minimum": 1},
    }
}
_CHALLENGE = {
    "WWW-Authenticate": {
        "description": f'`Bearer realm="{REALM}"`, with `error="invalid_token"` when a token '
        "was sent (RFC 6750 §3)",
        "schema": {"type": "string"},
    }
}
_TOKEN = f"a token matching {REQUEST_ID.pattern}"
_REQUEST_ID_PARAMETER = {
    "name": "X-Request-Id",
    "in": "header",
    "required": False,
    "description": f"names the request in every log line for it, in every service; one not "
    f"{_TOKEN} is replaced by one the gateway makes",
    "schema": {"type": "string"},
}
_IDEMPOTENCY_KEY_PARAMETER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "runs the request once for the caller and this key, for a day: the same "
    "request sent again is answered as it was first, with `Idempotent-Replayed: true`; sent "
    "again while the first still runs, it is 409 `idempotency-key-in-use`, to ask again after "
    "its Retry-After (after the first's 504, it is asked of the service again, which runs the "
    "key once); another request with the key is 422 `idempotency-key-reused`; a 5xx is not "
    "kept, so a retry runs again",
    "schema": {"type": "string", "pattern": f"^{IDEMPOTENCY_KEY.pattern}$"},
}
_REPLAYED_HEADER = {
    "description": "`true` when the answer is the one kept for the request's Idempotency-Key",
    "schema": {"type": "string", "enum": ["true"]},
}
# What the caller's rate leaves them, on every answer to a request counted against it
# (draft-ietf-httpapi-ratelimit-headers); absent where the operator set no rate.
_RATE_HEADERS = {
    "RateLimit-Policy": {
        "description": f'`"{RATE_POLICY}";q=<requests>;w={WINDOW_S}`: the caller\'s rate, '
        f"requests a {WINDOW_S}-second window (an agent counts apart from its person)",
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": f'`"{RATE_POLICY}";r=<remaining>;t=<seconds>`: what is left of it, '
        "and the seconds until its window ends",
        "schema": {"type": "string"},
    },
}
_REQUEST_ID_HEADER = {
    "description": f"the request's id: the client's own, if {_TOKEN}, else one the gateway made",
    "schema": {"type": "string"},
}


# What each part of the API is, in the specs' words: the tag a client's generator names its
# class after, and a reader's index.
_AREAS = {
    "probes": "Whether the gateway and the services behind it answer, for a load balancer.",
    "document": "This document.",
    "console": "The console's pages and scripts, what a person's browser loads.",
    "pending": "Everything waiting on the person, across services.",
    "poa": "Power-of-Action grants: what an agent may buy, send or change, verified to ALLOW, "
    "ASK_USER or DENY with a rule id; the acts recorded and the asks waiting on the person.",
    "agents": "The person's one personal agent and the persona it wears; the org's own "
    "agents and bots, and its persona library.",
    "preferences": "What the person's agent is told of how they like to be answered.",
    "billing": "The org's capacity in use (the roster) and its metered runtime.",
    "rooms": "Rooms, their messages (each with its authoring kind), questions and drafts.",
    "lines": "The person's own lines (a number, an address) their agent answers by.",
    "carriers": "The carriers' webhooks, each verified by its line's own signing secret.",
    "ladder": "The person's ladder (draft, confirm, send) by scope, their window, and the "
    "org's ceiling, which only lowers it.",
    "windows": "Sends waiting out their window, which the person may edit, replace or stop.",
    "confirmations": "The replies the person's agent asked them to confirm.",
    "mod": "Mods installed, the surface they offer, the layers of patches arranging the app, "
    "and the drafts an agent writes over them.",
    "mcp": "The `mod` tool, for an agent, over MCP.",
    "chonk": "Manager agents (Chonks): runs inside charters, their receipts, the packets "
    "left to a person, the org's voice, and what they know.",
}


def _named(method: str, path: str) -> str:
    return "_".join([method.lower(), *re.findall(r"\w+", path)])


def _name_and_tag(paths: dict[str, dict[str, Any]]) -> list[str]:
    """Each operation named, and tagged with its part of the API as its path begins unless
    tagged already; the tags, in the order they first come."""
    tags: dict[str, None] = {}
    for path, operations in paths.items():
        for method, op in operations.items():
            op.setdefault("operationId", _named(method, path))
            op.setdefault("tags", [_area(path)])
            tags.update(dict.fromkeys(op["tags"]))
    return list(tags)


def _area(path: str) -> str:
    if path.startswith(("/healthz", "/readyz")):
        return "probes"
    if path.startswith("/console"):
        return "console"
    if path == "/v1/openapi.json":
        return "document"
    return path.split("/")[2]


def _link(route: Route, op: dict[str, Any], routes: Sequence[Route]) -> None:
    """What a 201 made or a 202 holds, and each operation on it, linked from the answer as
    its Location names it: OpenAPI links whose parameters are the reply's fields, which a
    client (or a fuzzer's stateful phase) follows rather than guess an id."""
    assert route.location is not None
    fields = LOCATED.findall(route.location)
    made = LOCATED.sub("{}", route.location)
    links = {
        _named(r.method, r.path): {
            "operationId": _named(r.method, r.path),
            "parameters": {
                name: f"$response.body#/{field.replace('.', '/')}"
                for name, field in zip(r.path_params, fields, strict=True)
            },
        }
        for r in routes
        if r is not route
        and r.kind == "json"
        and len(r.path_params) == len(fields)
        and _on(re.sub(r"{\w+}", "{}", r.path), made)
    }
    for status in ("201", "202"):
        if status in op["responses"]:
            op["responses"][status]["links"] = links


def _on(path: str, made: str) -> bool:
    """Whether an operation at `path` acts on what is at `made` (each parameter `{}`): on
    it, or on something under it."""
    return path == made or path.startswith(f"{made}/")


def _operation(route: Route, schemas: dict[str, Any]) -> dict[str, Any]:
    request, reply = route.subject.request.__name__, route.subject.reply.__name__
    op: dict[str, Any] = {
        "operationId": _named(route.method, route.path),
        "summary": route.summary,
        "tags": ["carriers" if route.kind == "webhook" else _area(route.path)],
        "x-subject": route.subject.name,
        "parameters": [
            {"name": p, "in": "path", "required": True, "schema": schemas[request]["properties"][p]}
            for p in route.path_params
        ]
        + [
            {"name": q, "in": "query", "schema": schemas[request]["properties"][q]}
            for q in route.query
        ],
        "responses": {
            str(route.status): {
                "description": reply,
                "content": {"application/json": {"schema": {"$ref": _REF.format(name=reply)}}},
            },
            "503": {
                "description": "a transient failure (the bus, the store or a service away): "
                "ask again after Retry-After",
                "headers": _RETRY_AFTER,
                "content": _PROBLEM,
            },
            "default": {"description": "a problem naming what was wrong", "content": _PROBLEM},
        },
    }
    if route.kind != "webhook":
        op["responses"]["401"] = {
            "description": "no token, or one refused (expired, forged, revoked): the problem "
            "names which",
            "headers": _CHALLENGE,
            "content": _PROBLEM,
        }
        op["responses"]["429"] = {
            "description": "over the caller's rate (`rate-limited`) or a line's claims "
            "(`claim-limit`): ask again after Retry-After; or a stream past those the caller "
            "may hold (`too-many-streams`)",
            "headers": _RETRY_AFTER,
            "content": _PROBLEM,
        }
    if route.kind == "stream":
        op["responses"][str(route.status)] = {
            "description": "text/event-stream: one `message` event per message, id its seq",
            "content": {"text/event-stream": {"schema": _EVENT}},
        }
    if route.kind == "watch":
        op["responses"][str(route.status)] = {
            "description": "text/event-stream: `layer` events {layer, version} and `draft` "
            "events {layer, id, state}",
            "content": {"text/event-stream": {"schema": {"type": "object"}}},
        }
    if route.status == 204:
        op["responses"]["204"] = {"description": f"done: no body ({reply} is not sent)"}
    if route.accepted is not None:
        op["responses"]["202"] = {
            "description": f"{reply} with `{route.accepted}` set: held, not done",
            "content": {"application/json": {"schema": {"$ref": _REF.format(name=reply)}}},
        }
    if route.kind == "pending_stream":
        op["responses"][str(route.status)] = {
            "description": "text/event-stream: a `pending` event holding the whole list (as "
            "GET /v1/pending answers it) at once and each time it changes; `unavailable` while "
            "a service holding part of it cannot be asked; `refused` (a problem) ends it",
            "content": {"text/event-stream": {"schema": {"$ref": _REF.format(name=reply)}}},
        }
    if route.twiml:
        op["responses"][str(route.status)] = {
            "description": "TwiML: what the carrier does with the call",
            "content": {"text/xml": {"schema": {"type": "string"}}},
        }
    if route.handshake:
        op["responses"][str(route.status)] = {
            "description": "the challenge, said back",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
        op["parameters"] += [
            {"name": f"hub.{name}", "in": "query", "required": True, "schema": {"type": "string"}}
            for name in ("mode", "verify_token", "challenge")
        ]
    op["parameters"].append(_REQUEST_ID_PARAMETER)
    if route.kind == "json" and route.method in KEYED:
        op["parameters"].append(_IDEMPOTENCY_KEY_PARAMETER)
        for status in (str(route.status), "202"):
            if status in op["responses"]:
                replayed = {"Idempotent-Replayed": _REPLAYED_HEADER}
                op["responses"][status]["headers"] = replayed
    if route.location is not None:
        for status, what in (("201", "made"), ("202", "holds")):
            if status in op["responses"]:
                where = {
                    "description": f"where what it {what} is read: {route.location}",
                    "schema": {"type": "string"},
                }
                response = op["responses"][status]
                response["headers"] = {**response.get("headers", {}), "Location": where}
    for response in op["responses"].values():
        response["headers"] = {**response.get("headers", {}), "X-Request-Id": _REQUEST_ID_HEADER}
        if route.kind != "webhook":
            response["headers"] |= _RATE_HEADERS
    if route.kind == "webhook" and not route.has_body:
        op["security"] = []
    elif route.kind == "webhook":
        op["security"] = []
        op["responses"]["406"] = {
            "description": "email (Mailgun): refused for good, so Mailgun does not ask again; "
            "the problem's rule says why",
            "headers": {"X-Request-Id": _REQUEST_ID_HEADER},
            "content": _PROBLEM,
        }
        op["requestBody"] = {
            "required": True,
            "description": "the carrier's own format, signed as the carrier signs it",
            "content": {
                "application/x-www-form-urlencoded": {"schema": {"type": "object"}},
                "application/json": {"schema": {"type": "object"}},
            },
        }
    elif route.has_body:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _body(schemas, route)}},
        }
    return op


def _body(schemas: dict[str, Any], route: Route) -> dict[str, Any]:
    """The request type less the fields that come from the path: a component of its own,
    `<request>Body`, so a client's generator names its model after the contract and not
    after the route."""
    request = route.subject.request.__name__
    if not route.path_params:
        return {"$ref": _REF.format(name=request)}
    schema = schemas[request]
    props = {k: v for k, v in schema.get("properties", {}).items() if k not in route.path_params}
    required = [k for k in schema.get("required", []) if k not in route.path_params]
    name = f"{request}Body"
    body = {**schema, "title": name, "properties": props, "required": required}
    if schemas.setdefault(name, body) != body:
        raise ValueError(f"{name}: two routes take {request} less different path fields")
    return {"$ref": _REF.format(name=name)}


def _plain(
    summary: str, media: str = "application/json", *, unready: bool = False, unknown: bool = False
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": {media: {}}}}
    if unready:
        responses["503"] = {"description": "not ready: who did not answer", "content": {media: {}}}
    if unknown:
        responses["404"] = {"description": "no such service", "content": _PROBLEM}
    return {"summary": summary, "security": [], "responses": responses}
