"""The persona library: platform presets, shadowed per org by the org's own."""

from collections.abc import Mapping

import msgspec

from libs.contracts.agents import ListedPersona, Persona
from libs.contracts.problem import Refused

__all__ = ["SELF", "library", "load_presets", "owned_by_org", "resolve"]

# The persona a person's agent is made with: that person, from their own preferences.
SELF = "self"


def load_presets(raw: bytes) -> dict[str, Persona]:
    """Presets as shipped. A preset with a field `Persona` does not name (a ladder level,
    say) is refused here, at load, and the service does not start."""
    presets = msgspec.json.decode(raw, type=list[Persona])
    names = [p.name for p in presets]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"presets named twice: {dupes}")
    return {p.name: p for p in presets}


def owned_by_org(persona: Persona) -> Persona:
    """An org's own persona, one an org may add: any name but `self`. An org preset shadows
    a platform one for that org's agents (hip-0524 §3), but `self` is each person's own: an
    admin's `self` would change, without them, what every member's agent says in their name
    (and drop the preset's "never promise what they have not promised")."""
    if persona.name == SELF:
        raise Refused(
            "persona-reserved",
            409,
            f"{SELF!r} is each person's own persona, derived from their preferences; an org "
            "may not shadow it",
        )
    return persona


def library(presets: Mapping[str, Persona], own: Mapping[str, Persona]) -> list[ListedPersona]:
    """What an org sees: each preset unless the org has its own of that name, then the
    org's own, by name."""
    listed = [ListedPersona(origin="org", persona=p) for p in own.values()]
    listed += [
        ListedPersona(origin="platform", persona=p) for n, p in presets.items() if n not in own
    ]
    return sorted(listed, key=lambda entry: entry.persona.name)


def resolve(name: str, presets: Mapping[str, Persona], own: Persona | None) -> Persona | None:
    """The persona `name` an agent wears: the org's own of that name, else the platform's."""
    return own or presets.get(name)
