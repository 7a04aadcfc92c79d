"""The surface, the layers and their versions, and what composes from them (§9.1 to §9.3,
§9.4 rules 1, 2, 5, 6, 9)."""

import asyncio

from libs.contracts import mod
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime import pages
from libs.runtime.service import request_key
from services.mod.domain import patches, surface
from services.mod.domain.drafts import commits
from services.mod.handlers.common import KEPT_BY_LADDER, Mod, may_keep, ops_data, person_of
from services.mod.store import Stored

__all__ = ["Layers"]


class Layers(Mod):
    async def surface(self, _: mod.GetSurface, p: Principal) -> mod.Surface:
        found = await self._installs(p)
        loaded, missing = self._activated(found)
        return mod.Surface(
            versions=await self._versions(p),
            order=[f"{m.publisher}/{m.id}" for m, _ in loaded],
            entries=self._entries(found, p.is_agent),
            missing=missing,
        )

    async def layer(self, req: mod.GetLayer, p: Principal) -> mod.Layer:
        stored, version = await self._store.layer(self._key(p, req.layer))
        return mod.Layer(layer=req.layer, version=version, ops=stored.ops, change=stored.change)

    async def composed(self, _: mod.GetComposed, p: Principal) -> mod.Composed:
        return await self._composed(p, mine=True)

    async def org_composed(self, _: mod.GetComposed, p: Principal) -> mod.Composed:
        return await self._composed(p, mine=False)

    async def write(self, req: mod.WriteLayer, p: Principal) -> mod.Written:
        """Checked whole first; then committed at `base`, or held as a draft: always for an
        agent, unless the person's level lets it act unasked (§9.4 rule 2)."""
        person_of(p)
        if p.is_agent and "mod:write" not in p.roles:
            raise Refused("mod-write-needed", 403, "an agent without mod:write writes no layer")
        if req.layer == "user" and p.is_agent and not p.is_own_agent:
            raise Refused(  # §9.4 rule 2: no other agent writes a person's layer
                "not-own-agent", 403, f"only {p.sub}'s own agent drafts their layer, not {p.act}"
            )
        if req.layer == "org" and not p.is_agent and "admin" not in p.roles:
            raise Refused("admin-only", 403, f"only an admin of {p.org} writes its layer")
        # The two reads are independent: asked together, a write waits for one round trip.
        entries, ((org, org_version), (user, user_version)) = await asyncio.gather(
            self._surface(p), self._store.layers(self._key(p, "org"), self._key(p, "user"))
        )
        index = surface.index(entries)
        stored, version = (org, org_version) if req.layer == "org" else (user, user_version)
        org_hides = patches.hidden_by(org.ops) if req.layer == "user" else frozenset()
        after = patches.checked(
            req.layer, stored.ops, req.ops, req.note, index, org_hides=org_hides
        )
        fault = next((i for i, op in enumerate(req.ops) if op.id in KEPT_BY_LADDER), None)
        if fault is not None:
            raise Refused(
                "kept-by-ladder",
                422,
                f"op {fault}: {req.ops[fault].id} is your ladder's; set it at /v1/ladder",
                index=fault,
            )
        if p.is_agent:
            effective = await self._level(p)
            how, why = commits(
                req.layer,
                agent=True,
                level=effective.level,
                window=effective.window,
                sensitive=patches.sensitive(req.ops, index),
            )
            if how != "now":
                return await self._hold(
                    req, p, why, window=effective.window if how == "window" else None
                )
        elif req.draft:
            return await self._hold(req, p, "held for your Keep", window=None)
        value = Stored(ops=after, change=self._change(p, req))
        if request_key() and (made := _as_made(stored, version, req.base, value.change)):
            return made
        data: dict[str, object] = {"ops": ops_data(req.ops)}
        key, target = self._key(p, req.layer), _target(p, req.layer)
        written = await self._write_at(
            p, req.layer, key, req.base, value, "mod.layer.write", data, target
        )
        return mod.Written(version=written)

    async def versions(self, req: mod.ListVersions, p: Principal) -> mod.VersionList:
        found = await self._store.versions(self._key(p, req.layer))
        older = [
            mod.Version(version=v, ops=s.ops, change=s.change)
            for v, s in found
            if req.before is None or v < req.before
        ]
        page, more = pages.first(older, req.limit)
        return mod.VersionList(versions=page, next=page[-1].version if more else None)

    async def revert(self, req: mod.Revert, p: Principal) -> mod.Written:
        """A NEW version whose ops equal `version`'s: history is never rewritten."""
        if not may_keep(p, req.layer):
            raise Refused(
                "may-not-revert",
                403,
                "an agent undoes a change by drafting the ops that undo it"
                if p.is_agent
                else f"only an admin of {p.org} reverts its layer",
            )
        key = self._key(p, req.layer)
        old = await self._store.version(key, req.version)
        if old is None:
            raise Refused(
                "version-gone",
                404,
                f"version {req.version} of the {req.layer} layer is not retained",
            )
        change = mod.Change(by=p.sub, at=self._clock(), act=p.act, reverted_to=req.version)
        if request_key() and (made := _as_made(*await self._store.layer(key), req.base, change)):
            return made
        value, data = Stored(ops=old.ops, change=change), {"reverted_to": req.version}
        target = _target(p, req.layer)
        version = await self._write_at(
            p, req.layer, key, req.base, value, "mod.layer.revert", data, target
        )
        return mod.Written(version=version)

    async def _versions(self, p: Principal) -> dict[str, int]:
        (_, org), (_, user) = await self._store.layers(self._key(p, "org"), self._key(p, "user"))
        return {"org": org, "user": user}

    def _change(self, p: Principal, req: mod.WriteLayer) -> mod.Change:
        return mod.Change(by=p.sub, at=self._clock(), act=p.act, note=req.note, ops=req.ops)


def _as_made(stored: Stored, version: int, base: int, change: mod.Change) -> mod.Written | None:
    """The version a keyed request made before its answer was lost with its gateway and its
    replica: the layer moved from `base`, and its newest version is the very change asked
    for."""
    if version != base and patches.same_change(stored.change, change):
        return mod.Written(version=version)
    return None


def _target(p: Principal, layer: mod.LayerName) -> str:
    return f"user:{p.sub}" if layer == "user" else "org"
