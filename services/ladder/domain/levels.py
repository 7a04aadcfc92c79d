"""Levels, where each applies, and who may change them (hip-0524 §4, §8, §9)."""

import re
from typing import Any, Literal, get_args

import msgspec

from libs.contracts.ladder import SEND_MEANS, ChangeLevel, LadderSettings, Level
from libs.contracts.problem import Refused
from libs.contracts.rooms import Transport

__all__ = [
    "RANK",
    "TRANSPORTS",
    "change",
    "decided_by",
    "effective",
    "lower_of",
    "resolved",
    "salvage",
]

TRANSPORTS: tuple[str, ...] = get_args(Transport)
_ROOM_ID = re.compile(r"^[a-z]+-[0-9a-f]{16}$")

RANK: dict[str, int] = {"draft": 0, "confirm": 1, "send": 2}
Setting = Literal["default", "transport", "room", "ceiling"]


def lower_of(a: Level, b: Level) -> Level:
    return a if RANK[a] <= RANK[b] else b


def resolved(settings: LadderSettings, room: str | None, transport: str | None) -> Level:
    """The most specific level set: the room's, else the transport's, else the default.
    Overrides never combine; an unset one inherits."""
    if room is not None and room in settings.rooms:
        return settings.rooms[room]
    if transport is not None and transport in settings.transports:
        return settings.transports[transport]  # type: ignore[index]
    return settings.default


def effective(
    settings: LadderSettings, ceiling: Level | None, room: str | None, transport: str | None
) -> Level:
    """The resolved level, then the org's ceiling, which can only lower it."""
    level = resolved(settings, room, transport)
    return level if ceiling is None else lower_of(level, ceiling)


def decided_by(
    settings: LadderSettings, ceiling: Level | None, room: str | None, transport: str | None
) -> tuple[Level, Setting]:
    """The effective level and the setting that decided it: the room's override, the
    transport's, the default, or the org's ceiling where it lowered that."""
    if room is not None and room in settings.rooms:
        level, source = settings.rooms[room], "room"
    elif transport is not None and transport in settings.transports:
        level, source = settings.transports[transport], "transport"  # type: ignore[index]
    else:
        level, source = settings.default, "default"
    if ceiling is not None and RANK[ceiling] < RANK[level]:
        return ceiling, "ceiling"
    return level, source  # type: ignore[return-value]


def change(settings: LadderSettings, request: ChangeLevel) -> LadderSettings:
    """The settings after the person's change.

    Raising to `send` is its own act and needs the plain acknowledgement of what it means.
    """
    if request.scope == "default":
        if request.target is not None:
            raise Refused("invalid-request", 422, "the default has no target")
        if request.level is None:
            raise Refused("invalid-request", 422, "the default cannot be unset; set draft")
        before, after = settings.default, request.level
        changed = msgspec.structs.replace(settings, default=request.level)
    else:
        if not request.target:
            raise Refused("invalid-request", 422, f"a {request.scope} override names its target")
        if request.scope == "transport" and request.target not in TRANSPORTS:
            raise Refused(
                "invalid-request",
                422,
                f"no transport {request.target!r}; one of {', '.join(TRANSPORTS)}",
            )
        if request.scope == "room" and not _ROOM_ID.match(request.target):
            raise Refused("invalid-request", 422, f"{request.target!r} is not a room id")
        field = "rooms" if request.scope == "room" else "transports"
        overrides = dict(getattr(settings, field))
        room = request.target if request.scope == "room" else None
        transport = request.target if request.scope == "transport" else None
        before = resolved(settings, room, transport)
        if request.level is None:
            overrides.pop(request.target, None)
        else:
            overrides[request.target] = request.level
        changed = msgspec.structs.replace(settings, **{field: overrides})
        after = resolved(changed, room, transport)
    if after == "send" and before != "send" and request.acknowledge != SEND_MEANS:
        raise Refused(
            "send-not-acknowledged",
            422,
            f"send means: {SEND_MEANS} Choose it on its own, with `acknowledge` set to "
            "exactly that sentence.",
        )
    return changed


def salvage(stored: Any) -> tuple[LadderSettings, list[str]]:
    """Settings from a stored value that no longer decodes, and what was dropped: an
    override that cannot be read inherits, so no stored value can stop a lowering (§9)."""
    stored = stored if isinstance(stored, dict) else {}
    dropped: list[str] = []

    def kept(field: str, valid: Any) -> dict[str, Level]:
        found = stored.get(field)
        found = found if isinstance(found, dict) else {}
        good = {k: v for k, v in found.items() if valid(k) and v in RANK}
        dropped.extend(f"{field}.{k}" for k in found if k not in good)
        return good

    fields: dict[str, Any] = {
        "transports": kept("transports", lambda k: k in TRANSPORTS),
        "rooms": kept("rooms", lambda k: isinstance(k, str) and _ROOM_ID.match(k)),
    }
    for name, default in (("default", "draft"), ("window", "5m")):
        fields[name] = stored.get(name, default)
    try:
        return msgspec.convert(fields, LadderSettings), dropped
    except msgspec.ValidationError:
        return LadderSettings(rooms=fields["rooms"], transports=fields["transports"]), [
            *dropped,
            "default or window",
        ]
