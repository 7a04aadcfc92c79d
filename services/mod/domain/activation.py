"""Load order (§3.4): a mod activates after every service it uses is provided, ties broken
by name; one whose need is never met is left out, naming the service; when a provider
leaves, every mod using it leaves first."""

from collections.abc import Sequence

from libs.contracts.mod import Manifest, Missing
from services.mod.domain.manifests import mod_id

__all__ = ["activated", "leaving"]


def activated(mods: Sequence[Manifest]) -> tuple[list[Manifest], list[Missing]]:
    """(the mods in activation order, the mods left out with the service each lacks)."""
    waiting = sorted(mods, key=mod_id)
    order: list[Manifest] = []
    provided: set[str] = set()
    while True:
        ready = next((m for m in waiting if all(u in provided for u in m.uses)), None)
        if ready is None:
            break
        waiting.remove(ready)
        order.append(ready)
        provided |= {f"{mod_id(ready)}#{p.service}" for p in ready.provides}
    missing = [
        Missing(mod=mod_id(m), service=next(u for u in m.uses if u not in provided))
        for m in waiting
    ]
    return order, missing


def leaving(mods: Sequence[Manifest], leaver: str) -> list[str]:
    """The mods that leave with `leaver`, in the order they unload: its users (and theirs)
    first, latest activated first, then `leaver` itself."""
    order, _ = activated(mods)
    rest = [m for m in mods if mod_id(m) != leaver]
    still, _ = activated(rest)
    kept = {mod_id(m) for m in still}
    return [mod_id(m) for m in reversed(order) if mod_id(m) not in kept]
