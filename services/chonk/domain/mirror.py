"""What of a tenant's mirrored data never reaches a model (§5.4, EC-MGR-010): fields whose
free text carries what a Chonk may not repeat (a calendar event's title says why someone is
out; only when they are back may be said). Each is dropped from the context bundle before
any prompt is built; the list is data, and a field found leaking is added to it."""

from typing import Any

__all__ = ["REDACTED", "redacted"]

# Dotted paths into the context bundle; `*` is every item of a list.
REDACTED: frozenset[str] = frozenset(
    {
        "calendar.*.title",  # EC-MGR-010: "out for surgery"
        "calendar.*.description",
        "calendar.*.attendees_notes",
    }
)


def redacted(bundle: dict[str, Any], fields: frozenset[str] = REDACTED) -> dict[str, Any]:
    """`bundle` without the listed fields; nothing else changes."""
    out: dict[str, Any] = dict(bundle)
    for path in fields:
        out = _without(out, path.split("."))
    return out


def _without(value: Any, path: list[str]) -> Any:
    head, *rest = path
    if head == "*" and isinstance(value, list):
        return [_without(item, rest) if rest else item for item in value] if rest else []
    if not isinstance(value, dict) or head not in value:
        return value
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    return {**value, head: _without(value[head], rest)}
