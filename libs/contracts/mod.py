"""`tether.mod.*`: mods, and a person's or an org's arrangement of the app (hip-0528).

A mod is a manifest (§2): what it contributes, what it may touch, where its backend runs.
An org's admin installs one pinned to a digest with the consented permissions; a person
installs their own in their home org. The surface (§9.1) is every contribution a patch can
name, computed from the manifests loaded for the caller. A layer (§9.3) holds patches (§9.2)
over the layers beneath it, versioned by its KV revision; a draft (§9.4) is a layer write
held until a person keeps or discards it. The tables the spec lost are in
spec/hip-0528-tables.md, and so are the addresses.
"""

from typing import Annotated, Any, Literal, get_args

import msgspec

from libs.contracts.base import Contract, Instant, key_token
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject, request_subject, service_contract

__all__ = [
    "CONTRACT",
    "DRAWN",
    "KINDS",
    "OPS",
    "App",
    "Backend",
    "Bind",
    "Build",
    "Change",
    "Command",
    "Composed",
    "Contributes",
    "DraftEvent",
    "Entry",
    "GetComposed",
    "GetLayer",
    "GetSurface",
    "HeldDrafts",
    "Hide",
    "Install",
    "InstallList",
    "Installed",
    "Kind",
    "Layer",
    "LayerDraft",
    "LayerDraftList",
    "LayerDraftRef",
    "LayerName",
    "ListInstalls",
    "ListLayerDrafts",
    "ListVersions",
    "Manifest",
    "Missing",
    "Move",
    "Op",
    "Reason",
    "Rename",
    "Revert",
    "Set",
    "Setting",
    "Show",
    "Surface",
    "Token",
    "TokenOp",
    "Uninstall",
    "Uninstalled",
    "Verdict",
    "Version",
    "VersionList",
    "View",
    "WriteLayer",
    "Written",
    "drafts_key",
    "layer_key",
    "require_read",
]

# The contribution kinds are a closed set (§2): a manifest naming another is refused.
Kind = Literal[
    "apps", "views", "commands", "settings", "tokens", "agents", "skills", "mcp", "tools"
]
KINDS: tuple[str, ...] = get_args(Kind)
# The kinds a host holds and a patch arranges; the other four are rows in the cloud (§2).
DRAWN: tuple[str, ...] = ("apps", "views", "commands", "settings", "tokens")
# The ops each drawn kind admits (hip-0528-tables.md, "The seven ops").
OPS: dict[str, tuple[str, ...]] = {
    "apps": ("hide", "show", "move", "rename"),
    "views": ("hide", "show", "move", "rename"),
    "commands": ("hide", "show", "rename", "bind"),
    "settings": ("set",),
    "tokens": ("token",),
}

LayerName = Literal["org", "user"]
Name = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,39}$(?!\n)")]
ModId = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,39}/[a-z][a-z0-9-]{0,39}$(?!\n)")]
FullId = Annotated[
    str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,39}(/[a-z][a-z0-9-]{0,39}){2}$(?!\n)")
]
Slot = Annotated[  # <app full id>:<slot>
    str,
    msgspec.Meta(
        pattern=r"^[a-z][a-z0-9-]{0,39}(/[a-z][a-z0-9-]{0,39}){2}:[a-z][a-z0-9-]{0,39}$(?!\n)"
    ),
]
Digest = Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$(?!\n)")]
Commit = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{40}$(?!\n)")]
Path = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Text = Annotated[str, msgspec.Meta(max_length=200)]
DraftId = Annotated[str, msgspec.Meta(pattern=r"^md-[0-9a-f]{16}$(?!\n)")]
Revision = Annotated[int, msgspec.Meta(ge=0, le=2**53 - 1)]
Governs = Literal["authority", "money", "data-leaving", "agent-limits"]

# The manifest (§2). Titles are checked as plain text by the service, which lists every
# reason a manifest is refused at once.


class App(Contract):
    id: Name
    title: str
    icon: str = ""
    slots: tuple[Name, ...] = ()


class View(Contract):
    """A page at `route` in `app` (an app of its own mod), or a panel in `slot`
    (`<app full id>:<slot>`), exactly one of the two."""

    id: Name
    title: str
    app: str | None = None
    route: str | None = None
    slot: str | None = None


class Command(Contract):
    id: Name
    title: str


class Setting(Contract):
    """`schema` is the value's JSON Schema, inline (ours: the cloud reads a manifest without
    the package's files), in the subset the service checks: type, enum, minimum, maximum,
    minLength, maxLength, default. A setting that `governs` authority, money, data leaving
    the org or an agent's own limits is `sensitive`, and a manifest saying otherwise is
    refused; absent is false."""

    id: Name
    title: str
    scope: Literal["user", "org"]
    schema: dict[str, Any]
    sensitive: bool = False
    governs: tuple[Governs, ...] = ()


class Token(Contract):
    id: Name
    title: str
    values: tuple[Name, ...]


class ContributedAgent(Contract):
    id: Name
    file: Path


class Skill(Contract):
    id: Name
    file: Path


class McpServer(Contract):
    id: Name
    tools: tuple[Name, ...] = ()


class Tool(Contract):
    id: Name
    schema: Path


class Contributes(Contract):
    apps: tuple[App, ...] = ()
    views: tuple[View, ...] = ()
    commands: tuple[Command, ...] = ()
    settings: tuple[Setting, ...] = ()
    tokens: tuple[Token, ...] = ()
    agents: tuple[ContributedAgent, ...] = ()
    skills: tuple[Skill, ...] = ()
    mcp: tuple[McpServer, ...] = ()
    tools: tuple[Tool, ...] = ()


class Provides(Contract):
    service: Name


class Backend(Contract):
    """Where the mod's backend runs: `wasm` or `sandbox`, nothing else (§5.5)."""

    kind: str
    module: Path | None = None
    image: Path | None = None
    exports: tuple[Name, ...] = ()


class Build(Contract):
    """The build door's record (§5.6): the commit (40 hex digits, never a branch or tag),
    the lockfile's and toolchain's digests, and the one digest of the whole output."""

    repo: Path
    commit: Commit
    lockfile: Digest
    toolchain: Digest
    digest: Digest


class Manifest(Contract):
    """The `mod` key of a package.json, with the package's `version` beside it."""

    id: Name
    publisher: Name
    title: str
    version: str
    contributes: Contributes = Contributes()
    provides: tuple[Provides, ...] = ()
    uses: tuple[str, ...] = ()
    permissions: tuple[str, ...] = ()
    backend: Backend | None = None
    build: Build | None = None


# Review (§7).


class Reason(Contract, omit_defaults=True):
    text: str
    file: str | None = None
    line: int | None = None


class Verdict(Contract):
    """Evidence for a person, never the decision; it binds to the digest it read."""

    stage: Literal["commit", "submission"]
    verdict: Literal["pass", "hold", "refuse"]
    reasons: tuple[Reason, ...]
    reviewer: str
    bundle: Digest


# Installs (ours: the tool plane and consent pages are not in this project).


class Install(Contract):
    """Install `manifest` (checked whole, every reason listed) pinned to `digest`, with
    `permissions` consented: exactly the manifest's, never more. Into `layer`: the org's
    (its admins'), or the caller's own in their home org; unnamed, an admin's goes to the
    org and anyone else's to their own."""

    manifest: dict[str, Any]
    digest: Digest
    permissions: tuple[str, ...]
    layer: LayerName | None = None


class Installed(Contract):
    mod: ModId
    title: str
    layer: LayerName
    digest: Digest
    permissions: tuple[str, ...]
    installed_by: str
    installed_at: Instant
    review: Verdict | None = None
    reviewed: Literal["reviewed", "unreviewed"] = "unreviewed"


class ListInstalls(Contract):
    pass


class InstallList(Contract):
    installs: list[Installed]


class Uninstall(Contract):
    """Uninstall a mod from `layer`, named as an install names it."""

    publisher: Name
    id: Name
    layer: LayerName | None = None


class Uninstalled(Contract):
    """`left`: the mods that left, the users of what it provided first, then the mod."""

    mod: ModId
    left: tuple[str, ...]


# The surface (§9.1).


class Entry(Contract, omit_defaults=True):
    kind: Kind
    id: FullId
    title: str
    layer: Literal["hanzo", "org", "user"]
    ops: tuple[str, ...]
    slots: tuple[str, ...] = ()
    app: str | None = None
    slot: str | None = None
    scope: Literal["user", "org"] | None = None
    schema: dict[str, Any] | None = None
    sensitive: bool = False
    values: tuple[str, ...] = ()


class Missing(Contract):
    """A mod left out: the service it uses that no active mod provides."""

    mod: ModId
    service: str


class GetSurface(Contract):
    pass


class Surface(Contract):
    versions: dict[str, int]
    order: list[str]
    entries: list[Entry]
    missing: list[Missing] = []


# Patches (§9.2): seven ops, each `{op, kind, id, ...}`.


class Hide(Contract, tag_field="op", tag="hide"):
    kind: Kind
    id: FullId


class Show(Contract, tag_field="op", tag="show"):
    kind: Kind
    id: FullId


class Move(Contract, tag_field="op", tag="move", omit_defaults=True):
    kind: Kind
    id: FullId
    index: Annotated[int, msgspec.Meta(ge=0, le=1000)]
    slot: Slot | None = None


class Rename(Contract, tag_field="op", tag="rename"):
    kind: Kind
    id: FullId
    title: str


class Set(Contract, tag_field="op", tag="set"):
    kind: Kind
    id: FullId
    value: Any


class TokenOp(Contract, tag_field="op", tag="token"):
    kind: Kind
    id: FullId
    value: Annotated[str, msgspec.Meta(max_length=40)]  # one of the token's names, checked


class Bind(Contract, tag_field="op", tag="bind"):
    kind: Kind
    id: FullId
    chord: Annotated[str, msgspec.Meta(max_length=64)]


Op = Hide | Show | Move | Rename | Set | TokenOp | Bind


class Change(Contract, omit_defaults=True):
    """What made a version: who wrote it, the agent that acted where one did, the note, and
    the ops written or the version reverted to (or the draft kept)."""

    by: str
    at: Instant
    act: str | None = None
    note: str = ""
    ops: list[Op] = []
    reverted_to: int | None = None
    draft: str | None = None


class GetLayer(Contract):
    layer: LayerName


class Layer(Contract):
    """A layer at `version` (its KV revision; 0 is the empty layer)."""

    layer: LayerName
    version: int
    ops: list[Op]
    change: Change | None = None


class WriteLayer(Contract):
    """Ops written against `base`, or held as a draft (`draft`, always for an agent)."""

    layer: LayerName
    base: Revision
    ops: Annotated[list[Op], msgspec.Meta(min_length=1, max_length=64)]
    note: Text = ""
    draft: bool = False


class LayerDraft(Contract, omit_defaults=True):
    """A layer write held for Keep; `commits_at` when it commits itself (§9.4 rule 2), and
    `waits` why it waits for Keep instead."""

    id: DraftId
    layer: LayerName
    base: int
    ops: list[Op]
    note: str
    writer: str
    state: Literal["open", "kept", "discarded", "expired"]
    created_at: Instant
    expires_at: Instant
    act: str | None = None
    commits_at: Instant | None = None
    waits: str = ""
    version: int | None = None


class DraftEvent(Contract, omit_defaults=True):
    """The last change to a layer's drafts, which a watcher of them reports."""

    id: DraftId
    state: Literal["open", "kept", "discarded", "expired"]
    writer: str
    act: str | None = None


class HeldDrafts(Contract, omit_defaults=True):
    """A layer's drafts as stored: the open ones (at most 16), the last closed ones, the
    change that produced this value (none for a claim), and the open ones a Keep or a
    self-commit has claimed (`keeping`) while it applies their ops."""

    open: list[LayerDraft] = []
    closed: list[LayerDraft] = []
    last: DraftEvent | None = None
    keeping: tuple[str, ...] = ()


class Written(Contract, omit_defaults=True):
    """A version written, or a draft held (the gateway answers that with 202)."""

    version: int | None = None
    draft: LayerDraft | None = None


class ListVersions(Contract):
    """A layer's retained versions, newest first: `limit` of those before the version
    `before`, fewer where a page would pass 512 KiB."""

    layer: LayerName
    before: Revision | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=64)] = 64


class Version(Contract):
    version: int
    ops: list[Op]
    change: Change | None = None


class VersionList(Contract):
    """`next`: the `before` of the next page, when older versions are retained."""

    versions: list[Version]
    next: int | None = None


class Revert(Contract):
    layer: LayerName
    base: Revision
    version: Revision


class ListLayerDrafts(Contract):
    pass


class LayerDraftList(Contract):
    drafts: list[LayerDraft]


class LayerDraftRef(Contract):
    id: DraftId


class GetComposed(Contract):
    pass


class Composed(Contract):
    """What a host draws for the caller: hanzo, then org, then user (§3.5, §9.2 rule 5)."""

    versions: dict[str, int]
    apps: list[dict[str, Any]]
    views: list[dict[str, Any]]
    commands: list[dict[str, Any]]
    settings: dict[str, Any]
    tokens: dict[str, str]
    hidden: list[str]


def _subject(verb: str, request: type, reply: type, summary: str) -> Subject:
    return request_subject("mod", verb, request, reply, summary)


INSTALL = _subject("install", Install, Installed, "install a mod in my org (admin) or my own")
INSTALLS = _subject("installs", ListInstalls, InstallList, "the mods installed for me")
UNINSTALL = _subject("uninstall", Uninstall, Uninstalled, "uninstall a mod")
SURFACE = _subject("surface", GetSurface, Surface, "what my app can be changed through")
LAYER = _subject("layer", GetLayer, Layer, "a layer I may read")
WRITE = _subject("write", WriteLayer, Written, "write a layer, or draft a write")
VERSIONS = _subject("versions", ListVersions, VersionList, "a layer's retained versions")
REVERT = _subject("revert", Revert, Written, "write a new version equal to an old one")
DRAFTS = _subject("drafts", ListLayerDrafts, LayerDraftList, "the drafts I may see")
DRAFT = _subject("draft", LayerDraftRef, LayerDraft, "one draft")
KEEP = _subject("keep", LayerDraftRef, Written, "keep a draft: commit it at its base")
DISCARD = _subject("discard", LayerDraftRef, LayerDraft, "discard a draft")
COMPOSED = _subject("composed", GetComposed, Composed, "what a host draws for me")
# Hanzo and the org's layer alone: what every member is drawn before their own changes,
# what an admin arranges. A subject of its own, not a field of `composed`'s request, which
# the release before would refuse from a gateway of this one as it rolls out.
ORG_COMPOSED = _subject("org_composed", GetComposed, Composed, "what my org draws for every member")
DRAFT_COMPOSED = _subject(
    "draft_composed", LayerDraftRef, Composed, "what I am drawn with a draft over its layer"
)


def require_read(p: Principal) -> None:
    """§9.4 rule 1: an agent reads the mod plane with the scope mod:read, or mod:write,
    whose writes are made against what it reads; refused otherwise. A person reads their
    own with their own token, as every route of theirs."""
    if p.is_agent and "mod:read" not in p.roles and "mod:write" not in p.roles:
        raise Refused("mod-read-needed", 403, "an agent without mod:read reads nothing of mods")


# The buckets: layers keep 64 versions a key; drafts and installs are the service's own.
LAYERS_BUCKET = "mod-layers"
DRAFTS_BUCKET = "mod-drafts"
INSTALLS_BUCKET = "mod-installs"


def layer_key(org: str, layer: LayerName, person: str) -> str:
    """A layer's key in `mod-layers`: the org's, or the person's in it."""
    return f"{org}.org" if layer == "org" else f"{org}.user.{key_token(person)}"


def drafts_key(layer: str, writer: str, act: str | None) -> str:
    """Where one writer's drafts over the layer keyed `layer` are held in `mod-drafts`: the
    person and the agent acting for them (`=`, which `key_token` never yields, for the
    person's own), so an agent reads and watches its own drafts and nothing else, and whoever
    keeps a layer's drafts reads them all under `<layer>.*.*`."""
    return f"{layer}.{key_token(writer)}.{key_token(act) if act else '='}"


CONTRACT = service_contract(
    "mod",
    [
        INSTALL,
        INSTALLS,
        UNINSTALL,
        SURFACE,
        LAYER,
        WRITE,
        VERSIONS,
        REVERT,
        DRAFTS,
        DRAFT,
        KEEP,
        DISCARD,
        COMPOSED,
        ORG_COMPOSED,
        DRAFT_COMPOSED,
    ],
    buckets=(LAYERS_BUCKET, DRAFTS_BUCKET, INSTALLS_BUCKET),
    shared_streams=("EVENTS", "TIMERS", "DEAD"),
    timer_targets=("draft_end", "draft_expiry"),
    watched=(LAYERS_BUCKET, DRAFTS_BUCKET),
)
