"""Patches (§9.2, hip-0528-tables.md): a write checked whole against the surface before
anything is stored, and a layer that keeps one op per target."""

import re
from collections.abc import Mapping, Sequence

import msgspec

from libs.contracts import codec
from libs.contracts.mod import (
    Bind,
    Change,
    Entry,
    Hide,
    LayerName,
    Move,
    Op,
    Rename,
    Set,
    Show,
    TokenOp,
)
from libs.contracts.problem import Refused
from services.mod.domain.schema import value_fault
from services.mod.domain.surface import Contribution
from services.mod.domain.text import plain, title_fault

__all__ = ["LAYER_MOST", "checked", "hidden_by", "merged", "same_change", "sensitive", "target"]

# Bytes of a layer's ops as JSON (ours): some two thousand ops, where a person arranges tens. A
# layer is answered whole, and each of its 64 retained versions holds it whole.
LAYER_MOST = 256 * 1024

_CHORD = re.compile(
    r"^(?:(?:ctrl|alt|shift|meta)\+){0,4}"
    r"(?:[a-z0-9]|f[1-9]|f1[0-2]|enter|space|tab|escape|up|down|left|right)$"
)
_GROUP = {
    Hide: "visibility",
    Show: "visibility",
    Move: "place",
    Rename: "title",
    Set: "value",
    TokenOp: "value",
    Bind: "chord",
}


def target(op: Op) -> tuple[str, str, str]:
    """What an op sets of its contribution: its visibility, place, title, value or chord."""
    return op.kind, op.id, _GROUP[type(op)]


def merged(layer: Sequence[Op], ops: Sequence[Op]) -> list[Op]:
    """The layer after `ops`: one op per target, the later replacing the earlier."""
    held: dict[tuple[str, str], Op] = {}
    for op in (*layer, *ops):
        held.pop(target(op), None)
        held[target(op)] = op
    return list(held.values())


def hidden_by(layer: Sequence[Op]) -> frozenset[Contribution]:
    return frozenset((op.kind, op.id) for op in layer if isinstance(op, Hide))


def sensitive(ops: Sequence[Op], surface: Mapping[Contribution, Entry]) -> bool:
    """Does a write set a sensitive setting (§9.4 rule 3)?"""
    return any(
        isinstance(op, Set) and (entry := surface.get((op.kind, op.id))) and entry.sensitive
        for op in ops
    )


def checked(
    layer_name: LayerName,
    layer: Sequence[Op],
    ops: Sequence[Op],
    note: str,
    surface: Mapping[Contribution, Entry],
    *,
    org_hides: frozenset[Contribution],
) -> list[Op]:
    """The layer after the write, or a 422 naming the first op refused and why; nothing is
    written unless every op passes."""
    if not plain(note, newlines=True):
        raise Refused("patch-invalid", 422, "the note is plain text, with no control characters")
    slots = frozenset(slot for e in surface.values() for slot in e.slots)
    for i, op in enumerate(ops):
        if fault := _fault(op, layer_name, surface, slots, org_hides):
            raise Refused("patch-invalid", 422, f"op {i} ({op.id}): {fault}", index=i)
    after = merged(layer, ops)
    if (size := len(codec.encode(after))) > LAYER_MOST:
        raise Refused(
            "layer-full",
            409,
            f"the {layer_name} layer would hold {size:,} bytes of ops, past the "
            f"{LAYER_MOST:,} it may: revert it to a smaller version, or write fewer",
        )
    bound: dict[str, str] = {}
    for op in after:
        if isinstance(op, Bind):
            if bound.setdefault(op.chord, op.id) != op.id:
                i = next(
                    i for i, o in enumerate(ops) if isinstance(o, Bind) and o.chord == op.chord
                )
                raise Refused(
                    "patch-invalid",
                    422,
                    f"op {i}: {op.chord} is bound to {bound[op.chord]} and {op.id} in one layer",
                    index=i,
                )
    return after


def _fault(
    op: Op,
    layer_name: LayerName,
    surface: Mapping[Contribution, Entry],
    slots: frozenset[str],
    org_hides: frozenset[Contribution],
) -> str | None:
    entry = surface.get((op.kind, op.id))
    if entry is None:
        return f"the surface lists no {op.kind} {op.id}"
    name = type(op).__struct_config__.tag
    if name not in entry.ops:
        return f"{op.kind} do not admit {name}"
    match op:
        case Show() if layer_name == "user" and (op.kind, op.id) in org_hides:
            return "the org hides it, and a person cannot show what their org hid"
        case Rename(title=title):
            return title_fault(title)
        case Set(value=value):
            if entry.scope == "org" and layer_name == "user":
                return "a setting of scope org is set only in the org layer"
            return value_fault(entry.schema or {}, value)
        case TokenOp(value=value) if value not in entry.values:
            return f"{value!r} is not one of {', '.join(entry.values)}"
        case Move(slot=slot) if slot is not None:
            if op.kind == "apps":
                return "an app moves only along the rail, never into a slot"
            if slot not in slots:
                return f"the surface lists no slot {slot}"
        case Bind(chord=chord) if not _CHORD.match(chord):
            return f"{chord!r} is not a chord: modifiers ctrl alt shift meta, + one key"
    return None


def same_change(made: Change | None, asked: Change) -> bool:
    """Whether the version `made` by is the change `asked` for, whenever it was made."""
    return made is not None and msgspec.structs.replace(made, at=asked.at) == asked
