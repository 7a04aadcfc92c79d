"""A setting's value schema: the subset of JSON Schema the service checks, and nothing it
would silently skip (ours: type, enum, minimum, maximum, minLength, maxLength, default)."""

from typing import Any

import msgspec

__all__ = ["VALUE_MOST", "default_of", "faults", "value_fault"]

# Bytes of JSON (ours): a setting holds a preference, not a document, and a layer and the
# drafts held over it keep many.
VALUE_MOST = 512

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
_KEYWORDS = {"type", "enum", "minimum", "maximum", "minLength", "maxLength", "default", "title"}


def faults(schema: dict[str, Any]) -> list[str]:
    """What is wrong with a schema a manifest declares."""
    found = [f"schema keyword {k!r} is not checked here" for k in sorted(set(schema) - _KEYWORDS)]
    kind = schema.get("type")
    if kind not in _TYPES:
        found.append(f"schema type must be one of {sorted(_TYPES)}, not {kind!r}")
    enum = schema.get("enum")
    if enum is not None and (not isinstance(enum, list) or not enum):
        found.append("schema enum must be a list of at least one value")
    if not found and "default" in schema and (fault := value_fault(schema, schema["default"])):
        found.append(f"schema default: {fault}")
    return found


def value_fault(schema: dict[str, Any], value: Any) -> str | None:
    """Why `value` is not one `schema` admits, or None."""
    if (size := len(msgspec.json.encode(value))) > VALUE_MOST:
        return f"a setting's value is at most {VALUE_MOST} bytes of JSON, not {size:,}"
    kind = schema.get("type", "string")
    wanted = _TYPES.get(kind, (str,))
    if not isinstance(value, wanted) or (kind != "boolean" and isinstance(value, bool)):
        return f"the value must be a {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"the value must be one of {schema['enum']}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"the value must be at least {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"the value must be at most {schema['maximum']}"
    if "minLength" in schema and len(value) < schema["minLength"]:
        return f"the value must be at least {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"the value must be at most {schema['maxLength']} characters"
    return None


def default_of(schema: dict[str, Any]) -> Any:
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    return enum[0] if enum else None
