"""A manifest, checked whole (§2, §5.4 rule 2, §5.5, §5.6): every reason it is refused is
listed at once, and nothing in it is skipped: a kind the HIP does not define is refused by
name."""

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from libs.contracts import codec
from libs.contracts.mod import (
    KINDS,
    App,
    Command,
    ContributedAgent,
    Manifest,
    McpServer,
    Setting,
    Skill,
    Token,
    Tool,
    View,
)
from libs.contracts.problem import Refused
from services.mod.domain import schema
from services.mod.domain.text import title_fault

__all__ = [
    "GRANTABLE",
    "MANIFEST_MOST",
    "check",
    "full_id",
    "mod_id",
    "offered_slots",
    "permission_fault",
]

# Bytes of JSON: an install keeps its manifest, and is read for every surface drawn from its
# layer. Hanzo's largest is 2.5 KB.
MANIFEST_MOST = 64 * 1024

# The grantable list (§5.4 rule 2, ours: the capabilities this project can name). Custody,
# identity, the operator's surface and the writes that install or configure code or arrange
# the app are never on it, whoever installs the mod.
GRANTABLE: frozenset[str] = frozenset(
    f"{capability}:{verb}"
    for capability in ("rooms", "contacts", "calendar", "drive", "board", "todo", "meet")
    for verb in ("read", "write")
) | {"agents:run", "host:notify", "host:navigate", "host:clipboard"}
_NEVER: dict[str, str] = {
    "kms": "custody",
    "wallet": "custody",
    "iam": "identity",
    "admin": "the operator's surface",
    "tools": "a write that installs or configures code",
    "marketplace": "a write that installs or configures code",
    "settings": "a write that configures the app",
    "mod": "a write that arranges the app",
}
_HOST = re.compile(r"^net:(?=.{1,253}\Z)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\Z")
_USES = re.compile(r"^[a-z][a-z0-9-]{0,39}/[a-z][a-z0-9-]{0,39}#[a-z][a-z0-9-]{0,39}\Z")
_TOP = frozenset(Manifest.__struct_fields__)
_TYPES: dict[str, type] = {
    "apps": App,
    "views": View,
    "commands": Command,
    "settings": Setting,
    "tokens": Token,
    "agents": ContributedAgent,
    "skills": Skill,
    "mcp": McpServer,
    "tools": Tool,
}
assert set(_TYPES) == set(KINDS)
_BACKENDS = ("wasm", "sandbox")
# Stand-ins for the required fields while another field is checked alone.
_PLACEHOLDER = {"id": "x", "publisher": "x", "title": "x", "version": "0"}


def mod_id(manifest: Manifest) -> str:
    return f"{manifest.publisher}/{manifest.id}"


def full_id(manifest: Manifest, local: str) -> str:
    return f"{manifest.publisher}/{manifest.id}/{local}"


def offered_slots(manifests: Iterable[Manifest]) -> frozenset[str]:
    """Every `<app full id>:<slot>` the apps of `manifests` offer."""
    return frozenset(
        f"{full_id(m, app.id)}:{slot}"
        for m in manifests
        for app in m.contributes.apps
        for slot in app.slots
    )


def permission_fault(permission: str) -> str | None:
    if permission in GRANTABLE or _HOST.match(permission):
        return None
    capability = permission.split(":", 1)[0]
    if capability in _NEVER:
        return f"{permission!r} is never grantable: {_NEVER[capability]}"
    return f"{permission!r} is not on the grantable list"


def check(raw: Any, *, slots: frozenset[str] = frozenset()) -> Manifest:
    """The manifest, or a 422 listing every reason it is refused. `slots` are the slots
    offered by the other mods it may place a view in."""
    if not isinstance(raw, Mapping):
        raise Refused("manifest-invalid", 422, "a manifest is a JSON object")
    codec.bounded("manifest", raw, MANIFEST_MOST)
    reasons = [f"{key}: no such field of a manifest" for key in sorted(set(raw) - _TOP)]
    contributes = raw.get("contributes", {})
    if not isinstance(contributes, Mapping):
        reasons.append("contributes: must be an object of kinds")
        contributes = {}
    kept: dict[str, list[Any]] = {}
    for kind, items in contributes.items():
        if kind not in _TYPES:
            reasons.append(f"contributes.{kind}: no such kind; the kinds are {', '.join(KINDS)}")
        elif not isinstance(items, list):
            reasons.append(f"contributes.{kind}: must be a list")
        else:
            kept[kind] = _decoded(items, _TYPES[kind], f"contributes.{kind}", reasons)
    # Each other field alone, so one that is wrong hides no reason another gives.
    fields: dict[str, Any] = {}
    for key in sorted(_TOP - {"contributes"}):
        try:
            msgspec.convert({**_PLACEHOLDER, **({key: raw[key]} if key in raw else {})}, Manifest)
        except msgspec.ValidationError as exc:
            reasons.append(f"{key}: {exc}" if key in raw else str(exc))
        else:
            fields[key] = raw.get(key, _PLACEHOLDER.get(key))
    manifest = msgspec.convert(
        {k: v for k, v in fields.items() if v is not None} | {"contributes": kept}, Manifest
    )
    reasons += _rules(manifest, slots)
    if reasons:
        raise Refused(
            "manifest-invalid",
            422,
            f"the manifest is refused for {len(reasons)} reason(s): {reasons[0]}",
            errors=tuple(reasons),
        )
    return manifest


def _decoded(items: list[Any], kind: type, where: str, reasons: list[str]) -> list[Any]:
    """The items that decode; a reason for each that does not."""
    kept = []
    for i, item in enumerate(items):
        try:
            msgspec.convert(item, kind)
        except msgspec.ValidationError as exc:
            reasons.append(f"{where}[{i}]: {exc}")
        else:
            kept.append(item)
    return kept


def _rules(m: Manifest, slots: frozenset[str]) -> list[str]:
    c = m.contributes
    reasons = [f"title: {fault}" for fault in [title_fault(m.title)] if fault]
    for kind in ("apps", "views", "commands", "settings", "tokens"):
        for i, item in enumerate(getattr(c, kind)):
            if fault := title_fault(item.title):
                reasons.append(f"contributes.{kind}[{i}].title: {fault}")
    for kind in KINDS:
        ids = [item.id for item in getattr(c, kind)]
        reasons += [f"contributes.{kind}: {id_!r} twice" for id_ in sorted(_twice(ids))]
    own_apps = {a.id for a in c.apps} | {full_id(m, a.id) for a in c.apps}
    offered = slots | offered_slots([m])
    for i, view in enumerate(c.views):
        where = f"contributes.views[{i}]"
        if (view.app is None) == (view.slot is None) or (view.app is None) != (view.route is None):
            reasons.append(f"{where}: names exactly one of app with route, or slot")
        elif view.app is not None and view.app not in own_apps:
            reasons.append(f"{where}: adds a page only to an app of its own mod, not {view.app}")
        elif view.route is not None and not view.route.startswith("/"):
            reasons.append(f"{where}: a route starts with /")
        elif view.slot is not None and view.slot not in offered:
            reasons.append(f"{where}: no app offers the slot {view.slot!r}")
    for i, setting in enumerate(c.settings):
        where = f"contributes.settings[{i}]"
        reasons += [f"{where}.schema: {fault}" for fault in schema.faults(setting.schema)]
        if setting.governs and not setting.sensitive:
            reasons.append(f"{where}: it governs {', '.join(setting.governs)}, so it is sensitive")
    for i, token in enumerate(c.tokens):
        if not token.values or _twice(token.values):
            reasons.append(f"contributes.tokens[{i}]: values are one or more distinct names")
    reasons += [f"permissions: {fault}" for p in m.permissions if (fault := permission_fault(p))]
    if m.backend is not None:
        if m.backend.kind not in _BACKENDS:
            reasons.append(f"backend.kind: {m.backend.kind!r}; a backend is wasm or sandbox")
        elif m.backend.kind == "wasm" and m.backend.module is None:
            reasons.append("backend: a wasm backend names its module")
        elif m.backend.kind == "sandbox" and m.backend.image is None:
            reasons.append("backend: a sandbox backend names its image")
    reasons += [
        f"uses: {u!r} is not <publisher>/<id>#<service>" for u in m.uses if not _USES.match(u)
    ]
    reasons += [f"provides: {s!r} twice" for s in sorted(_twice([p.service for p in m.provides]))]
    return reasons


def _twice(values: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    return {v for v in values if v in seen or seen.add(v)}  # type: ignore[func-returns-value]
