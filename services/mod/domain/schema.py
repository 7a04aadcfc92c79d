"""A setting's value schema: the subset of JSON Schema the service checks, and nothing it
would silently skip (ours: type, enum, minimum, maximum, minLength, maxLength, default)."""

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["VALUE_MOST", "default_of", "faults", "value_fault"]

# Bytes of JSON (ours): a setting holds a preference, not a document, and a layer and the
# drafts held over it keep many.
VALUE_MOST = 512

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    # What crossed the bus is read as Decimal (exact), what was shipped in a file as float.
    "number": (int, float, Decimal),
    "boolean": (bool,),
}
_A = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean"}
_KEYWORDS = {"type", "enum", "minimum", "maximum", "minLength", "maxLength", "default", "title"}


def _is_number(value: Any) -> bool:
    return isinstance(value, _TYPES["number"]) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# Each bound: the types it applies to, what its own value must be, and that said in words.
_BOUNDS: dict[str, tuple[tuple[str, ...], Callable[[Any], bool], str]] = {
    "minimum": (("integer", "number"), _is_number, "a number"),
    "maximum": (("integer", "number"), _is_number, "a number"),
    "minLength": (("string",), _is_count, "a whole number of 0 or more"),
    "maxLength": (("string",), _is_count, "a whole number of 0 or more"),
}


def faults(schema: dict[str, Any]) -> list[str]:
    """What is wrong with a schema a manifest declares: each keyword of the wrong kind for
    the type, or one no value could meet (every value a person sets is checked by it)."""
    found = [f"schema keyword {k!r} is not checked here" for k in sorted(set(schema) - _KEYWORDS)]
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:
        return [*found, f"schema type must be one of {sorted(_TYPES)}, not {kind!r}"]
    for key, (applies, fits, what) in _BOUNDS.items():
        if key not in schema:
            continue
        if kind not in applies:
            found.append(f"schema {key} does not apply to {_A[kind]}")
        elif not fits(schema[key]):
            found.append(f"schema {key} must be {what}, not {schema[key]!r}")
    for low, high in (("minimum", "maximum"), ("minLength", "maxLength")):
        if not found and low in schema and high in schema and schema[low] > schema[high]:
            found.append(f"schema {low} {schema[low]} is above its {high} {schema[high]}")
    if "title" in schema and not isinstance(schema["title"], str):
        found.append("schema title must be a string")
    enum = schema.get("enum")
    if enum is not None and (not isinstance(enum, list) or not enum):
        found.append("schema enum must be a list of at least one value")
    elif enum is not None and not found:
        plain = {k: v for k, v in schema.items() if k not in ("enum", "default")}
        found += [f"schema enum {v!r}: {f}" for v in enum if (f := value_fault(plain, v))]
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
        return f"the value must be {_A.get(kind, 'a string')}"
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
