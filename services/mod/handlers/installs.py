"""Installs (§6.2, hip-0528-tables.md): an org admin installs into the org, a person (an
admin too) their own mod into their home org; each pinned to a digest with exactly the
consented permissions. An agent may ask for an install and never accept one (§6.3)."""

from libs.contracts import mod
from libs.contracts.base import home_org
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.kv import retried
from services.mod.domain import bounds, manifests
from services.mod.domain.activation import leaving
from services.mod.handlers.common import Mod
from services.mod.store import InstallRecord, install_of

__all__ = ["Installs"]


class Installs(Mod):
    async def install(self, req: mod.Install, p: Principal) -> mod.Installed:
        layer = self._install_layer(p, "install", req.layer)
        found = await self._installs(p)
        loaded, _ = self._activated(found)
        manifest = manifests.check(
            req.manifest, slots=manifests.offered_slots(m for m, _ in loaded)
        )
        if manifest.publisher == "hanzo":
            raise Refused(
                "publisher-reserved",
                403,
                "hanzo's mods are the first-party layer, built from hanzoai/app; none is installed",
            )
        if manifest.build is None:
            raise Refused("build-missing", 422, "an install pins a build: the manifest has none")
        if req.digest != manifest.build.digest:
            raise Refused(
                "digest-mismatch",
                422,
                f"the install pins {req.digest}; the build record says {manifest.build.digest}",
            )
        if extra := sorted(set(req.permissions) - set(manifest.permissions)):
            raise Refused(
                "consent-exceeds-manifest", 422, f"consented beyond the manifest: {extra}"
            )
        if missing := sorted(set(manifest.permissions) - set(req.permissions)):
            raise Refused(
                "consent-incomplete", 422, f"the manifest asks for {missing}, not consented"
            )
        review = await self._review(manifest, req.digest, p)
        installed = mod.Installed(
            mod=manifests.mod_id(manifest),
            title=manifest.title,
            layer=layer,
            digest=req.digest,
            permissions=manifest.permissions,
            installed_by=p.sub,
            installed_at=self._clock(),
            review=review,
            reviewed="unreviewed" if review is None else "reviewed",
        )
        prefix = mod.layer_key(p.org, layer, p.sub)
        key = f"{prefix}.{manifest.publisher}.{manifest.id}"
        record = InstallRecord(manifest=manifest, installed=installed)

        async def attempt() -> None:
            """The layer's bounds decided on its installs as read, and the install written
            only if none landed or left since: installs asked at once never pass them."""
            held, at = await self._store.installed_at(prefix)
            mods = [install_of(value).manifest for _, value in held]
            bounds.admit(layer, mods, manifest, self._nc.max_payload)
            async with self._trail.change(
                p.org,
                actor=p,
                action="mod.install",
                target=installed.mod,
                data={"layer": layer, "digest": req.digest, "permissions": list(req.permissions)},
            ):
                await self._store.install(key, record, prefix=prefix, at=at)

        await retried(attempt, key)
        return installed

    async def installs(self, _: mod.ListInstalls, p: Principal) -> mod.InstallList:
        prefixes = [f"{p.org}.org"]
        if home_org(p.sub) == p.org:
            prefixes.append(mod.layer_key(p.org, "user", p.sub))
        found = [
            install_of(value).installed
            for prefix in prefixes
            for _, value in await self._store.installed(prefix)
        ]
        return mod.InstallList(installs=sorted(found, key=lambda i: i.mod))

    async def uninstall(self, req: mod.Uninstall, p: Principal) -> mod.Uninstalled:
        layer = self._install_layer(p, "uninstall", req.layer)
        mod_id = f"{req.publisher}/{req.id}"
        loaded, _ = await self._loaded(p)
        left = tuple(leaving([m for m, _ in loaded], mod_id))
        key = f"{mod.layer_key(p.org, layer, p.sub)}.{req.publisher}.{req.id}"
        uninstalled = await self._store.uninstall(
            key,
            record=lambda *_: self._trail.change(
                p.org, actor=p, action="mod.uninstall", target=mod_id, data={"left": list(left)}
            ),
        )
        if not uninstalled:
            raise Refused("install-not-found", 404, f"{mod_id} is not installed here")
        return mod.Uninstalled(mod=mod_id, left=left or (mod_id,))

    def _install_layer(self, p: Principal, what: str, asked: mod.LayerName | None) -> mod.LayerName:
        """The layer `p` installs into: the org's for its admins, their own in their home
        org for anyone; unnamed, an admin's is the org's (an admin is a person too, with
        mods of their own)."""
        if p.is_agent:
            raise Refused(
                "agent-may-not",
                403,
                f"an agent may ask for an {what}, never do it: consent is the person's",
            )
        admin = "admin" in p.roles
        layer = asked or ("org" if admin else "user")
        if layer == "org" and not admin:
            raise Refused("admin-only", 403, f"only an admin of {p.org} may {what} for the org")
        if layer == "user" and home_org(p.sub) != p.org:
            raise Refused("not-your-org", 403, f"your own mods are in your home org, not {p.org}")
        return layer

    async def _review(
        self, manifest: mod.Manifest, digest: str, p: Principal
    ) -> mod.Verdict | None:
        """With no reviewer there is no verdict; a verdict is evidence and never holds a
        private install (§7 rules 3, 5, 9). Every verdict is recorded."""
        if self._reviewer is None or manifest.build is None:
            return None
        source = {"repo": manifest.build.repo, "commit": manifest.build.commit}
        verdict = self._reviewer.review("submission", manifest, digest, source)
        await self._trail.append(
            p.org,
            actor=p,
            action="mod.review.verdict",
            target=manifests.mod_id(manifest),
            data={
                "verdict": verdict.verdict,
                "reviewer": verdict.reviewer,
                "bundle": verdict.bundle,
                "reasons": [r.text for r in verdict.reasons],
            },
        )
        return verdict
