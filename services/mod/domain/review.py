"""Review (§7): a pluggable step with one interface, and one implementation that reads the
manifest. A verdict is evidence, never the decision; with no reviewer there is no verdict,
and no verdict is never a pass."""

from typing import Literal, Protocol

from libs.contracts.mod import Manifest, Reason, Verdict
from services.mod.domain.manifests import permission_fault

__all__ = ["ManifestReader", "Reviewer", "reviewer"]

Stage = Literal["commit", "submission"]


class Reviewer(Protocol):
    name: str

    def review(
        self, stage: Stage, manifest: Manifest, bundle: str, source: dict[str, str]
    ) -> Verdict: ...


class ManifestReader:
    """Reads the manifest alone: a permission off the grantable list is refused; a backend
    leased in a sandbox, and outbound hosts, ask a person's read (hold)."""

    name = "tether-manifest-reader"

    def review(
        self, stage: Stage, manifest: Manifest, bundle: str, source: dict[str, str]
    ) -> Verdict:
        refused = [Reason(text=f) for p in manifest.permissions if (f := permission_fault(p))]
        held = [
            Reason(text=f"reaches {p.removeprefix('net:')} outside the org")
            for p in manifest.permissions
            if p.startswith("net:")
        ]
        if manifest.backend is not None and manifest.backend.kind == "sandbox":
            held.append(Reason(text="runs a sandbox backend, leased on demand"))
        verdict = "refuse" if refused else "hold" if held else "pass"
        return Verdict(
            stage=stage,
            verdict=verdict,
            reasons=tuple(refused or held),
            reviewer=self.name,
            bundle=bundle,
        )


def reviewer(name: str) -> Reviewer | None:
    """The reviewer configured by name; "" is none."""
    found: dict[str, Reviewer | None] = {"": None, "manifest": ManifestReader()}
    if name not in found:
        raise ValueError(f"no reviewer {name!r}; one of {sorted(found)}")
    return found[name]
