"""The nine roster charters, the shared never list and §4's allowlist matrix, as data
checked whole at start (§2, §4): a charter whose action allowlist holds a never-list kind
is refused, as is a voice below the directness floor."""

from collections.abc import Mapping
from typing import Any

import msgspec

from libs.contracts.chonk import ChonkSkin
from services.chonk.domain.types import RoleCharter

__all__ = ["DIRECTNESS_FLOOR", "ROSTER", "CharterError", "load", "skinned"]

ROSTER = ("chonksworth", "fin", "ops", "human", "porpoise", "build", "marketing", "revenue",
          "security")  # fmt: skip
DIRECTNESS_FLOOR = 0.6  # §7.1: candor is a commitment


class CharterError(ValueError):
    """Shipped charter data that does not check: the service does not start on it."""


class _Row(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    id: str
    cells: dict[str, str]
    note: str = ""


class _Never(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    kind: str
    note: str


class _Shipped(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    never: tuple[_Never, ...]
    matrix: tuple[_Row, ...]
    charters: tuple[dict[str, Any], ...]


def skinned(charter: RoleCharter, skin: ChonkSkin | None) -> RoleCharter:
    """`charter` as a tenant calls and draws its Chonk (§1, §7.1): only its voice's name,
    species and signature phrases change, each the tenant set; its charter, its allowlist
    and the rest of its voice never do."""
    if skin is None:
        return charter
    voice = charter.voice
    return msgspec.structs.replace(
        charter,
        voice=msgspec.structs.replace(
            voice,
            display_name=skin.name or voice.display_name,
            species=skin.species or voice.species,
            signature_phrases=(
                voice.signature_phrases
                if skin.signature_phrases is None
                else skin.signature_phrases
            ),
        ),
    )


def load(raw: bytes) -> tuple[Mapping[str, RoleCharter], frozenset[str]]:
    """(the charters by id, the never list's kinds), or CharterError naming every fault."""
    shipped = msgspec.json.decode(raw, type=_Shipped)
    faults: list[str] = []
    never = frozenset(n.kind for n in shipped.never)
    seen: set[str] = set()
    for row in shipped.matrix:
        allowed = {"tool": {"R", ""}, "action": {"P", ""}}.get(row.kind)
        if allowed is None:
            faults.append(f"matrix {row.id}: a row is a tool or an action, not {row.kind!r}")
        elif set(row.cells) != set(ROSTER) or set(row.cells.values()) - allowed:
            faults.append(f"matrix {row.id}: one cell per Chonk, each of {sorted(allowed)}")
        if row.id in seen:
            faults.append(f"matrix {row.id}: twice")
        seen.add(row.id)
    charters: dict[str, RoleCharter] = {}
    for raw_charter in shipped.charters:
        chonk = raw_charter.get("chonkId", "?")
        column = {r.id for r in shipped.matrix if r.cells.get(chonk)}
        tools = frozenset(r.id for r in shipped.matrix if r.kind == "tool" and r.id in column)
        actions = frozenset(r.id for r in shipped.matrix if r.kind == "action" and r.id in column)
        try:
            charter = msgspec.convert(
                {**raw_charter, "toolAllowlist": tools, "actionAllowlist": actions}, RoleCharter
            )
        except msgspec.ValidationError as exc:
            faults.append(f"charter {chonk}: {exc}")
            continue
        if forbidden := sorted(a for a in actions if a.split(":")[0] in never):
            faults.append(f"charter {chonk}: the never list's {forbidden} in its action allowlist")
        if charter.voice.directness < DIRECTNESS_FLOOR:
            faults.append(f"charter {chonk}: directness below {DIRECTNESS_FLOOR}")
        charters[chonk] = charter
    if missing := sorted(set(ROSTER) - set(charters)):
        faults.append(f"the roster lacks {missing}")
    if faults:
        raise CharterError("; ".join(faults))
    return charters, never
