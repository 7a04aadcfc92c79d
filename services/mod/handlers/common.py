"""What every mod handler shares: the mods loaded for a caller and the surface they make,
who the caller is to a layer, the person's level asked of the ladder, and timers on the
scheduler."""

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import ladder, scheduler
from libs.contracts.base import home_org
from libs.contracts.mod import (
    Composed,
    Entry,
    LayerDraft,
    LayerName,
    Manifest,
    Missing,
    layer_key,
)
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from libs.runtime.kv import Conflict
from services.mod.domain import compose, patches, surface
from services.mod.domain.activation import activated
from services.mod.domain.manifests import mod_id
from services.mod.domain.review import Reviewer
from services.mod.store import ModStore, Stored, install_of

__all__ = ["KEPT_BY_LADDER", "ME", "DraftTimer", "Mod", "may_keep", "ops_data", "person_of"]

Clock = Callable[[], datetime]
ME = "mod"
# The installs loaded for a caller as stored: (layer, revision, value) each.
Installs = tuple[tuple[str, int, bytes], ...]
# Settings another capability keeps: the surface lists them so a host draws them, and
# they are set there, so there is one level, never a second (hip-0524 §4).
KEPT_BY_LADDER = {
    "hanzo/settings/ladder-level": "level",
    "hanzo/settings/ladder-window": "window",
    "hanzo/settings/ladder-ceiling": "ceiling",
}


class DraftTimer(msgspec.Struct, frozen=True):
    """The payload of a draft's timers: its window's end, and its expiry."""

    org: str
    person: str
    layer: LayerName
    id: str


class Mod:
    def __init__(
        self,
        nc: Client,
        store: ModStore,
        trail: Trail,
        clock: Clock,
        *,
        hanzo: Sequence[Manifest],
        reviewer: Reviewer | None,
        draft_ttl: timedelta,
    ) -> None:
        self._nc, self._store, self._trail, self._clock = nc, store, trail, clock
        self._hanzo, self._reviewer, self._draft_ttl = tuple(hanzo), reviewer, draft_ttl

    async def _loaded(self, p: Principal) -> tuple[list[tuple[Manifest, str]], list[Missing]]:
        """The mods loaded for the caller in activation order, each with its layer: the
        first-party mods, the org's, and the person's own in their home org (§3.1, §3.5)."""
        found = await self._installs(p)
        return self._activated(found)

    async def _surface(self, p: Principal) -> list[Entry]:
        return self._entries(await self._installs(p), p.is_agent)

    async def _installs(self, p: Principal) -> Installs:
        prefixes = [("org", f"{p.org}.org")]
        if home_org(p.sub) == p.org:
            prefixes.append(("user", layer_key(p.org, "user", p.sub)))
        read = await asyncio.gather(*(self._store.installed(prefix) for _, prefix in prefixes))
        return tuple(
            (layer, rev, value)
            for (layer, _), installed in zip(prefixes, read, strict=True)
            for rev, value in installed
        )

    # An install's revision names its value, so a set of them names what activates and the
    # surface it makes: both are computed once per set (measured: 1 ms of 65 mods each time).

    @functools.lru_cache(maxsize=256)  # noqa: B019  (one Mod per process, never freed)
    def _activated(self, found: Installs) -> tuple[list[tuple[Manifest, str]], list[Missing]]:
        layer_of = {mod_id(m): "hanzo" for m in self._hanzo}
        mods = list(self._hanzo)
        for layer, _, value in found:
            manifest = install_of(value).manifest
            layer_of[mod_id(manifest)] = layer
            mods.append(manifest)
        order, missing = activated(mods)
        return [(m, layer_of[mod_id(m)]) for m in order], missing

    @functools.lru_cache(maxsize=256)  # noqa: B019
    def _entries(self, found: Installs, for_agent: bool) -> list[Entry]:
        loaded, _ = self._activated(found)
        return surface.entries(loaded, for_agent=for_agent)

    def _key(self, p: Principal, layer: LayerName) -> str:
        """The caller's own layer: the org's, or the person's (an agent's person's)."""
        return layer_key(p.org, layer, p.sub)

    async def _write_at(
        self,
        p: Principal,
        layer: LayerName,
        key: str,
        base: int,
        value: Stored,
        action: str,
        data: dict[str, object],
        target: str,
    ) -> int:
        """Recorded, then written at `base`; a layer that moved is a 409 naming its version,
        and the record says the write failed (§9.3 rule 5, §9.6)."""
        try:
            async with self._trail.change(
                p.org,
                actor=p,
                action=action,
                target=target,
                data={"layer": layer, "before": base, **data},
            ):
                return await self._store.write_layer(key, value, base)
        except Conflict:
            _, now = await self._store.layer(key)
            raise Refused(
                "layer-moved",
                409,
                f"the {layer} layer is at version {now}, not {base}: read it and decide again",
                version=now,
            ) from None

    async def _composed(
        self, p: Principal, *, mine: bool, draft: Awaitable[LayerDraft] | None = None
    ) -> Composed:
        """Hanzo, the org's layer, and the caller's own over them if `mine`; with the ops of
        the draft `draft` finds over the layer it would change, as a host shows an open
        draft (§9.4 rule 7): a draft of the org's layer over the org's alone, as every
        member is drawn it. What it is made of is read at once, the draft among it."""
        reads: list[Awaitable[Any]] = [
            self._store.layers(self._key(p, "org"), self._key(p, "user")),
            self._surface(p),
            self._level(p),
        ]
        if draft is not None:
            reads.append(draft)
        read = await asyncio.gather(*reads)
        ((org, org_version), (user, user_version)), entries, effective = read[:3]
        shown: LayerDraft | None = read[3] if draft is not None else None
        org_ops, user_ops = org.ops, user.ops if mine else []
        if shown is not None and shown.layer == "org":
            org_ops, user_ops = patches.merged(org_ops, shown.ops), []
        elif shown is not None:
            user_ops = patches.merged(user_ops, shown.ops)
        drawn = compose.composed(entries, org_ops, user_ops)
        for id_, field in KEPT_BY_LADDER.items():
            if id_ in drawn["settings"]:
                drawn["settings"][id_] = getattr(effective, field)
        return Composed(versions={"org": org_version, "user": user_version}, **drawn)

    async def _level(self, p: Principal) -> ladder.Effective:
        ask = ladder.LevelOf(org=p.org, person=p.sub)
        return await call(self._nc, ladder.LEVEL, ask, caller=ME)

    async def _timer(self, key: str, due_at: datetime, target: str, payload: DraftTimer) -> None:
        timer = scheduler.Schedule(key=key, due_at=due_at, target=target, payload=payload)
        await call(self._nc, scheduler.SCHEDULE, timer, caller=ME)

    async def _cancel_timers(self, draft_id: str) -> None:
        """The draft's state already says its timers do nothing; this spares the fires."""
        for key in (f"mod.{draft_id}.end", f"mod.{draft_id}.expiry"):
            try:
                await call(self._nc, scheduler.CANCEL, scheduler.Cancel(key=key), caller=ME)
            except Refused:
                pass  # never scheduled (no window), or already fired


def may_keep(p: Principal, layer: LayerName) -> bool:
    """Keep and revert are the person's on their layer and an org admin's on the org's;
    never an agent's (§9.4 rules 5, 8, 9)."""
    return not p.is_agent and (layer == "user" or "admin" in p.roles)


def person_of(p: Principal) -> str:
    if home_org(p.sub) is None:
        raise Refused("no-person", 403, f"{p.sub!r} is not a person <org>/<name>")
    return p.sub


def ops_data(ops: Sequence[Any]) -> list[Any]:
    return msgspec.to_builtins(list(ops))
