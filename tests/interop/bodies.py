"""A request body built from a JSON Schema of `tether contracts`, as a client's author would
build one: the required fields, each the least its schema allows, and the values `given`
(a field with a pattern, whose value only the caller knows, must be given)."""

from typing import Any

__all__ = ["minimal"]


def minimal(schema: dict, components: dict, **given: Any) -> dict:
    schema = _resolved(schema, components)
    assert schema.get("type") == "object", schema
    fields = {name: given[name] for name in given}
    for name in schema.get("required", ()):
        if name not in fields:
            fields[name] = _least(schema["properties"][name], components, name)
    unknown = set(fields) - set(schema["properties"])
    assert not unknown, f"{schema.get('title')} has no {sorted(unknown)}"
    return fields


def _least(schema: dict, components: dict, name: str) -> Any:
    schema = _resolved(schema, components)
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _least(schema["anyOf"][0], components, name)
    match schema.get("type"):
        case "object":
            return minimal(schema, components)
        case "array":
            return [_least(schema["items"], components, name)] * schema.get("minItems", 0)
        case "string":
            assert "pattern" not in schema, f"{name} has a pattern: give its value"
            return "a" * max(schema.get("minLength", 1), 1)
        case "integer" | "number":
            return schema.get("minimum", 0)
        case "boolean":
            return False
    raise ValueError(f"no least value of {name}: {schema}")


def _resolved(schema: dict, components: dict) -> dict:
    while "$ref" in schema:
        schema = components["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema
