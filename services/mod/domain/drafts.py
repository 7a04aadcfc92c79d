"""Drafts (§9.4): who writes what as a draft, when one commits itself, and a writer's open
drafts over a layer (at most 16 over the layer, whoever wrote them). A Keep or a
self-commit claims its draft before it applies the ops, so a discard or an expiry at the
same moment is refused rather than told it won while the layer changed."""

from datetime import datetime
from typing import Literal

import msgspec

from libs.contracts.ladder import Level, Window
from libs.contracts.mod import DraftEvent, HeldDrafts, LayerDraft, LayerName
from libs.contracts.problem import Refused

__all__ = [
    "MAX_OPEN",
    "Commit",
    "among",
    "claimed",
    "commits",
    "find",
    "lapsed",
    "opened",
    "released",
    "settled",
    "waiting",
]

MAX_OPEN = 16
_CLOSED_KEPT = 16
Commit = Literal["now", "window", "keep"]


def commits(
    layer: LayerName, *, agent: bool, level: Level, window: Window, sensitive: bool
) -> tuple[Commit, str]:
    """§9.4 rule 2's table, and rules 3 and 5: how an agent's write lands, and why it
    waits for Keep when it does. A person's own write is theirs to commit."""
    if not agent:
        return "now", ""
    if layer == "org":
        return "keep", "an agent never commits the org's layer"
    if sensitive:
        return "keep", "a sensitive setting waits for your Keep at every level"
    if level != "send":
        return "keep", f"your level is {level}: your agent's changes wait for your Keep"
    if window == "instant":
        return "now", ""
    return "window", ""


def opened(held: HeldDrafts, draft: LayerDraft, *, elsewhere: int = 0) -> HeldDrafts:
    """`draft` among its writer's open drafts (`held`), unless the layer's are full: its
    writer's and the `elsewhere` open under its other writers."""
    if any(d.id == draft.id for d in held.open):
        return held
    if len(held.open) + elsewhere >= MAX_OPEN:
        raise Refused(
            "drafts-full",
            409,
            f"this layer has {MAX_OPEN} open drafts; keep, discard or let one expire first",
        )
    return msgspec.structs.replace(held, open=[*held.open, draft], last=_event(draft))


def claimed(held: HeldDrafts, draft_id: str) -> HeldDrafts:
    """The open draft claimed by a Keep or a self-commit, before its ops are applied. One
    claimed already stays so: a Keep asked again completes it."""
    if not any(d.id == draft_id for d in held.open):
        closed = find(held, draft_id)
        was = closed.state if closed is not None else "removed"
        raise Refused("draft-closed", 409, f"draft {draft_id} was {was}")
    if draft_id in held.keeping:
        return held
    return msgspec.structs.replace(held, keeping=(*held.keeping, draft_id), last=None)


def released(held: HeldDrafts, draft_id: str) -> HeldDrafts:
    """The claim let go: the ops were not applied (the layer moved), and the draft is
    open as it was."""
    if draft_id not in held.keeping:
        return held
    keeping = tuple(k for k in held.keeping if k != draft_id)
    return msgspec.structs.replace(held, keeping=keeping, last=None)


def settled(
    held: HeldDrafts, draft_id: str, state: str, *, version: int | None = None
) -> HeldDrafts:
    """The draft kept, discarded or expired; one no longer open stays as it is, and one
    claimed is only kept."""
    draft = next((d for d in held.open if d.id == draft_id), None)
    if draft is None:
        return held
    if draft_id in held.keeping and state != "kept":
        raise Refused("draft-closed", 409, f"draft {draft_id} is being kept")
    done = msgspec.structs.replace(draft, state=state, version=version, commits_at=None)
    return HeldDrafts(
        open=[d for d in held.open if d.id != draft_id],
        closed=[done, *held.closed][:_CLOSED_KEPT],
        last=_event(done),
        keeping=tuple(k for k in held.keeping if k != draft_id),
    )


def waiting(held: HeldDrafts, draft_id: str, why: str) -> HeldDrafts:
    """An open draft that will not commit itself: it waits for Keep, saying why."""
    found = [
        msgspec.structs.replace(d, commits_at=None, waits=why) if d.id == draft_id else d
        for d in held.open
    ]
    return msgspec.structs.replace(held, open=found)


def same_write(made: LayerDraft, asked: LayerDraft) -> bool:
    """Whether `made` holds the write `asked` holds, whenever it was made and whatever
    became of it since."""
    return (made.layer, made.base, made.ops, made.note, made.writer, made.act) == (
        asked.layer, asked.base, asked.ops, asked.note, asked.writer, asked.act
    )  # fmt: skip


def lapsed(draft: LayerDraft, now: datetime) -> bool:
    """Whether `draft` is open past its expiry, its timer late or lost: it is expired by
    whoever finds it so, and never kept."""
    return draft.state == "open" and now >= draft.expires_at


def find(held: HeldDrafts, draft_id: str) -> LayerDraft | None:
    return next((d for d in (*held.open, *held.closed) if d.id == draft_id), None)


def among(
    writers: list[HeldDrafts], draft_id: str
) -> tuple[HeldDrafts, LayerDraft] | tuple[None, None]:
    """The draft `draft_id` among a layer's writers' drafts, with its writer's."""
    for held in writers:
        if (draft := find(held, draft_id)) is not None:
            return held, draft
    return None, None


def _event(draft: LayerDraft) -> DraftEvent:
    return DraftEvent(id=draft.id, state=draft.state, writer=draft.writer, act=draft.act)
