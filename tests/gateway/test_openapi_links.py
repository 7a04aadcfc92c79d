"""The OpenAPI document of the real route table: what a 201 made or a 202 holds is linked
to each operation on it (the GET its Location names, and those under it), so a client (or
schemathesis's stateful phase) follows it to what was made rather than to an id it
guessed."""

import msgspec
from openapi_spec_validator import validate

from services.gateway.openapi import openapi
from services.gateway.routes import ROUTES

DOCUMENT = msgspec.json.decode(msgspec.json.encode(openapi(ROUTES, version="test")))  # as served
OPERATIONS = {
    op["operationId"]: (path, op)
    for path, ops in DOCUMENT["paths"].items()
    for op in ops.values()
    if "operationId" in op
}


def _field(schema_name: str, pointer: str) -> dict:
    """The property a `$response.body#/a/b` pointer names in the reply's schema."""
    schema = DOCUMENT["components"]["schemas"][schema_name]
    for name in pointer.split("/"):
        options = schema.get("anyOf", [schema])  # a nullable field: its object, or null
        (found,) = [o for o in options if "$ref" in o or "properties" in o]
        if "$ref" in found:
            found = DOCUMENT["components"]["schemas"][found["$ref"].rsplit("/", 1)[1]]
        schema = found["properties"][name]
    return schema


def test_what_a_request_made_is_linked_to_each_operation_on_it():
    validate(DOCUMENT)
    linked: dict[tuple[str, str, str], set[str]] = {}
    for route in ROUTES:
        if route.location is None:
            continue
        op = DOCUMENT["paths"][route.path][route.method.lower()]
        for status, response in op["responses"].items():
            for link in response.get("links", {}).values():
                path, target = OPERATIONS[link["operationId"]]
                assert "Location" in response["headers"]
                params = [p["name"] for p in target["parameters"] if p["in"] == "path"]
                assert sorted(link["parameters"]) == sorted(params)
                reply = response["content"]["application/json"]["schema"]["$ref"].rsplit("/")[-1]
                for expression in link["parameters"].values():
                    assert _field(reply, expression.removeprefix("$response.body#/"))
                linked.setdefault((route.method, route.path, status), set()).add(
                    f"{link['operationId'].split('_')[0].upper()} {path}"
                )
    grant = {"GET /v1/poa/grants/{id}", "POST /v1/poa/grants/{id}/acts"}
    grant |= {"POST /v1/poa/grants/{id}/revoke"}
    assert linked == {
        ("POST", "/v1/poa/grants", "201"): grant | {"POST /v1/poa/grants/{id}/children"},
        ("POST", "/v1/poa/grants/{id}/children", "201"): grant,
        ("POST", "/v1/poa/grants/{id}/acts", "202"): {
            "GET /v1/poa/asks/{id}", "POST /v1/poa/asks/{id}/answer"
        },
        ("POST", "/v1/agents/me", "201"): {"GET /v1/agents/me"},
        ("POST", "/v1/rooms", "201"): {
            "GET /v1/rooms/{id}", "GET /v1/rooms/{id}/drafts", "GET /v1/rooms/{id}/messages",
            "POST /v1/rooms/{id}/messages", "POST /v1/rooms/{id}/questions",
        },
        ("POST", "/v1/mod/layers/{layer}", "202"): {
            "GET /v1/mod/drafts/{id}", "POST /v1/mod/drafts/{id}/commit",
            "DELETE /v1/mod/drafts/{id}", "GET /v1/mod/drafts/{id}/composed",
        },
        ("POST", "/v1/chonk/runs", "201"): {"GET /v1/chonk/runs/{id}"},
    }  # fmt: skip


def test_every_operation_is_named_once_and_tagged_with_its_part_of_the_api():
    # A client's generator names a method after each operationId and a class after each
    # tag; a reader finds an operation by its part. Each is named, none twice, and each
    # tag is declared with what that part is.
    operations = [
        (method.upper(), path, op)
        for path, ops in DOCUMENT["paths"].items()
        for method, op in ops.items()
    ]
    names = [op.get("operationId") for *_, op in operations]
    assert all(name and name.isidentifier() for name in names)
    assert len(set(names)) == len(names) == len(operations)
    declared = {t["name"]: t.get("description") for t in DOCUMENT["tags"]}
    assert all(declared.values())
    tagged = {(method, path): op["tags"] for method, path, op in operations}
    assert {tag for tags in tagged.values() for tag in tags} == declared.keys()
    assert all(len(tags) == 1 for tags in tagged.values())
    assert tagged["GET", "/readyz/{service}"] == ["probes"]
    assert tagged["GET", "/console/ladder.js"] == ["console"]
    assert tagged["POST", "/v1/mcp"] == ["mcp"]
    assert tagged["POST", "/v1/windows/{id}/stop"] == ["windows"]
    assert tagged["POST", "/v1/chonk/memory/{id}"] == ["chonk"]
    # The carriers' webhooks sit under a line's path, but no client of the API calls them.
    carriers = {path for (_, path), tags in tagged.items() if tags == ["carriers"]}
    assert carriers == {
        "/v1/lines/{transport}/inbound", "/v1/lines/{transport}/call",
        "/v1/lines/{transport}/voicemail", "/v1/lines/{transport}/status",
    }  # fmt: skip
    assert tagged["POST", "/v1/lines/{transport}/verify"] == ["lines"]


def test_every_body_is_a_component_a_generator_names_after_its_contract():
    # A generator names a model after a schema's title, or, for a body written inline,
    # after its route (`PostV1RoomsIdMessagesSend`). Each body is a component, named and
    # titled after the contract it carries: the contract itself, or `<contract>Body` when
    # the path carries some of its fields.
    schemas = DOCUMENT["components"]["schemas"]
    assert all(schema.get("title", name) == name for name, schema in schemas.items())
    bodies = {
        (method.upper(), path): op["requestBody"]["content"]["application/json"]["schema"]
        for path, ops in DOCUMENT["paths"].items()
        for method, op in ops.items()
        if "requestBody" in op and "tags" in op and op["tags"] != ["carriers"]
    }
    assert all(body.keys() == {"$ref"} for body in bodies.values()), bodies
    assert bodies["POST", "/v1/rooms"] == {"$ref": "#/components/schemas/CreateRoom"}
    send = bodies["POST", "/v1/rooms/{id}/messages"]
    assert send == {"$ref": "#/components/schemas/SendBody"}
    assert "id" not in schemas["SendBody"]["properties"] and "id" in schemas["Send"]["properties"]
    edit = {"$ref": "#/components/schemas/WindowEditBody"}  # two routes, one body
    assert (
        bodies["POST", "/v1/windows/{id}/edit"]
        == bodies["POST", "/v1/windows/{id}/replace"]
        == edit
    )
