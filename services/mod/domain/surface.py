"""The surface (§9.1): every contribution a patch can name, from the manifests loaded for
the caller, in activation order, each with its layer and the ops it admits."""

from collections.abc import Iterator, Mapping, Sequence

from libs.contracts.mod import OPS, Entry, Manifest
from services.mod.domain.manifests import full_id

__all__ = ["Contribution", "entries", "index"]

# A contribution is its kind and its full id: a mod's ids are its own within a kind, so a
# command and a token may share one (hanzo's settings: the command `theme` and the token
# `theme`), and a patch names both (§9.2).
Contribution = tuple[str, str]


def entries(loaded: Sequence[tuple[Manifest, str]], *, for_agent: bool = False) -> list[Entry]:
    """`loaded`: (manifest, layer) in activation order. An agent is answered no setting
    that governs an agent's own limits (§9.4 rule 4: the ladder's level, window and
    ceiling), so its patch naming one is refused as an unknown id."""
    return [e for m, layer in loaded for e in _of(m, layer, for_agent=for_agent)]


def index(found: Sequence[Entry]) -> Mapping[Contribution, Entry]:
    return {(e.kind, e.id): e for e in found}


def _of(m: Manifest, layer: str, *, for_agent: bool) -> Iterator[Entry]:
    def entry(kind: str, local: str, title: str, **extra: object) -> Entry:
        return Entry(
            kind=kind,  # type: ignore[arg-type]
            id=full_id(m, local),
            title=title,
            layer=layer,  # type: ignore[arg-type]
            ops=OPS[kind],
            **extra,  # type: ignore[arg-type]
        )

    c = m.contributes
    for app in c.apps:
        yield entry(
            "apps", app.id, app.title, slots=tuple(f"{full_id(m, app.id)}:{s}" for s in app.slots)
        )
    for view in c.views:
        app_id = (
            None if view.app is None else (view.app if "/" in view.app else full_id(m, view.app))
        )
        yield entry("views", view.id, view.title, app=app_id, slot=view.slot)
    for command in c.commands:
        yield entry("commands", command.id, command.title)
    for s in c.settings:
        if not (for_agent and "agent-limits" in s.governs):
            yield entry(
                "settings", s.id, s.title, scope=s.scope, schema=s.schema, sensitive=s.sensitive
            )
    for token in c.tokens:
        yield entry("tokens", token.id, token.title, values=token.values)
