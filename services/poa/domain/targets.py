"""Targets: whom an act may reach (poa-verifier V29 and §4.4)."""

from typing import Any

from services.poa.domain.reading import items, obj, subset

__all__ = ["admits", "effective_targets", "within"]


def effective_targets(authority: dict[str, Any], grant: dict[str, Any]) -> list[Any]:
    """An authority's own targets, or the grant-wide defaults when its list is empty."""
    own = items(authority.get("targets"))
    return own or items(obj(grant.get("defaults")).get("targets"))


def admits(targets: list[Any], counterparty: dict[str, Any], known: list[Any]) -> bool:
    """Some target of the counterparty's type admits its id (`named`, `known`, `any`)."""
    kind, id_ = counterparty.get("type"), counterparty.get("id")
    if not isinstance(kind, str):
        return False
    for entry in map(obj, targets):
        if entry.get("type") != kind:
            continue
        scope, ids = entry.get("scope"), items(entry.get("ids"))
        if scope == "any" or (scope in ("named", "known") and id_ in ids):
            return True
        if scope == "known" and id_ in known:
            return True
    return False


def within(child: list[Any], parent: list[Any]) -> bool:
    """§4.4: every child entry sits inside a parent entry of its type."""
    return all(_entry_within(obj(entry), parent) for entry in child)


def _entry_within(entry: dict[str, Any], parent: list[Any]) -> bool:
    if not isinstance(entry.get("type"), str):
        return False
    for candidate in map(obj, parent):
        if candidate.get("type") != entry.get("type"):
            continue
        if candidate.get("scope") == "any":
            return True
        if candidate.get("scope") == entry.get("scope") and subset(
            items(entry.get("ids")), items(candidate.get("ids"))
        ):
            return True
    return False
