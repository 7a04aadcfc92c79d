"""Composition (§3.5, §9.2 rule 5): hanzo, then org, then user. For each target the highest
layer holding an op wins, except that what the org hides stays hidden; a chord bound in two
layers goes to the higher one's command; an op whose id left the surface does nothing."""

from collections.abc import Sequence
from typing import Any

from libs.contracts.mod import Bind, Entry, Move, Op, Rename, Set, TokenOp
from services.mod.domain.patches import hidden_by, target
from services.mod.domain.schema import default_of

__all__ = ["composed"]

# Each target's op that wins (`patches.target`: a contribution's kind, id and what it sets).
Winning = dict[tuple[str, str, str], Op]


def composed(surface: Sequence[Entry], org: Sequence[Op], user: Sequence[Op]) -> dict[str, Any]:
    known = {(e.kind, e.id) for e in surface}
    org = [o for o in org if (o.kind, o.id) in known]
    user = [o for o in user if (o.kind, o.id) in known]
    # One op per target in a layer, and a person cannot show what the org hid.
    hidden = hidden_by(org) | hidden_by(user)
    winning: Winning = {target(op): op for op in (*org, *user)}
    chords = _chords(org, user)
    org_values = {o.id: o for o in org if isinstance(o, Set)}  # one op per target: the last

    def drawn(kind: str) -> list[Entry]:
        return [e for e in surface if e.kind == kind and (kind, e.id) not in hidden]

    # A place is a place among what is drawn.
    apps, views = _placed(drawn("apps"), winning), _placed(drawn("views"), winning)
    return {
        "apps": [{"id": e.id, "title": _title(e, winning), "slots": list(e.slots)} for e in apps],
        "views": [
            {
                "id": e.id,
                "title": _title(e, winning),
                "app": e.app,
                "slot": _slot(e, winning),
            }
            for e in views
        ],
        "commands": [
            {"id": e.id, "title": _title(e, winning), "chord": chords.get(e.id)}
            for e in drawn("commands")
        ],
        "settings": {e.id: _value(e, winning, org_values) for e in surface if e.kind == "settings"},
        "tokens": {e.id: _token(e, winning) for e in surface if e.kind == "tokens"},
        "hidden": sorted({id_ for _, id_ in hidden}),
    }


def _of(entry: Entry, group: str) -> tuple[str, str, str]:
    """The target `group` of `entry`'s contribution, as `patches.target` names an op's."""
    return entry.kind, entry.id, group


def _title(entry: Entry, winning: Winning) -> str:
    op = winning.get(_of(entry, "title"))
    return op.title if isinstance(op, Rename) else entry.title


def _slot(entry: Entry, winning: Winning) -> str | None:
    op = winning.get(_of(entry, "place"))
    return op.slot if isinstance(op, Move) and op.slot is not None else entry.slot


def _placed(entries: list[Entry], winning: Winning) -> list[Entry]:
    """In surface order, then each moved one placed at its index, lowest index first."""
    moved = sorted(
        (
            (op.index, i, e)
            for i, e in enumerate(entries)
            if isinstance(op := winning.get(_of(e, "place")), Move)
        ),
        key=lambda t: (t[0], t[1]),
    )
    placed = [e for e in entries if not isinstance(winning.get(_of(e, "place")), Move)]
    for index, _, e in moved:
        placed.insert(min(index, len(placed)), e)
    return placed


def _chords(org: Sequence[Op], user: Sequence[Op]) -> dict[str, str]:
    """command → chord: each layer's binds, the user's over the org's; a chord both bind
    goes to the user's command."""
    by_chord: dict[str, str] = {}
    for layer in (org, user):
        mine = {op.id: op.chord for op in layer if isinstance(op, Bind)}
        by_chord = {c: cmd for c, cmd in by_chord.items() if cmd not in mine}
        by_chord |= {chord: cmd for cmd, chord in mine.items()}
    return {cmd: chord for chord, cmd in by_chord.items()}


def _token(entry: Entry, winning: Winning) -> str:
    op = winning.get(_of(entry, "value"))
    return op.value if isinstance(op, TokenOp) else entry.values[0]


def _value(entry: Entry, winning: Winning, org_values: dict[str, Set]) -> Any:
    op = winning.get(_of(entry, "value"))
    if entry.scope == "org":  # set only in the org layer
        op = org_values.get(entry.id)
    return op.value if isinstance(op, Set) else default_of(entry.schema or {})
