"""`tether.ladder.*`: what a person's agent may send without them (hip-0524 §4-11).

A person's settings are theirs alone: a default level, transport and room overrides, and
the window a send waits. An org ceiling only lowers a person's level. Every reply an agent
drafts for its person comes here to be decided and carried out: held as a draft, asked as
a confirmation, or announced and sent at the end of a window unless the person intervenes.
"""

from typing import Annotated, Literal

import msgspec

from libs.contracts.base import Contract, Instant, OrgId, Seq, UserId
from libs.contracts.registry import Subject, request_subject, service_contract
from libs.contracts.rooms import Choice, RoomId, Text, Transport

__all__ = [
    "CONTRACT",
    "SEND_MEANS",
    "WINDOW_SECONDS",
    "Applies",
    "Ceiling",
    "ChangeLevel",
    "ChangeWindow",
    "ConfirmationAnswer",
    "ConfirmationList",
    "DecideRequest",
    "Decided",
    "Effective",
    "GetLadder",
    "LadderChanged",
    "LadderSettings",
    "Level",
    "LevelOf",
    "ListConfirmations",
    "ListWindows",
    "MyLadder",
    "PendingConfirmation",
    "PendingWindow",
    "Reply",
    "Routed",
    "SetCeiling",
    "WhatApplies",
    "Window",
    "WindowEdit",
    "WindowList",
    "WindowOption",
    "WindowRef",
]

Level = Literal["draft", "confirm", "send"]
Window = Literal["instant", "1m", "5m", "15m", "1h"]
WindowId = Annotated[str, msgspec.Meta(pattern=r"^w-[0-9a-f]{16}$(?!\n)")]
ConfirmationId = Annotated[str, msgspec.Meta(pattern=r"^c-[0-9a-f]{16}$(?!\n)")]

# How long each window waits (hip-0524 §5).
WINDOW_SECONDS: dict[str, int] = {"instant": 0, "1m": 60, "5m": 300, "15m": 900, "1h": 3600}

# What choosing `send` means, in the plain words the person must acknowledge (§4 rule 3).
SEND_MEANS = "Messages will go out in my name while I am not looking."


class LadderSettings(Contract):
    """A person's ladder: the most specific level set applies (room, then transport, then
    the default); an unset override inherits. `draft` wherever nothing says otherwise."""

    default: Level = "draft"
    transports: dict[Transport, Level] = {}
    rooms: dict[RoomId, Level] = {}
    window: Window = "5m"


class WindowOption(Contract):
    window: Window
    seconds: int
    statement: str


class GetLadder(Contract):
    pass


class MyLadder(Contract):
    """My settings, my org's ceiling, and the windows offered: none shorter than the
    scheduler's measured resolution; `instant` with the statement that it protects nothing."""

    settings: LadderSettings
    ceiling: Level | None
    offered_windows: list[WindowOption]
    resolution_ms: float
    send_means: str


class ChangeLevel(Contract):
    """Set `level` at one scope: the `default`, a `transport` or a `room` (`target` names
    which); `level` null unsets an override. Raising to send needs `acknowledge` to be
    exactly SEND_MEANS. One scope, one act."""

    level: Level | None
    scope: Literal["default", "transport", "room"] = "default"
    target: str | None = None
    acknowledge: str | None = None


class ChangeWindow(Contract):
    window: Window


class LadderChanged(Contract):
    """My settings after the change, and how many windows it canceled before answering."""

    settings: LadderSettings
    canceled_windows: int


class SetCeiling(Contract):
    """An org admin sets the org's ceiling (no member's agent sends above it), or lifts it
    with `level` null. Lifting raises no one: each person's own level still governs."""

    level: Level | None


class Ceiling(Contract):
    org: str
    level: Level | None
    canceled_windows: int


class DecideRequest(Contract):
    """The decision for one reply of `person`'s agent in `room`, nothing carried out."""

    org: OrgId
    person: UserId
    room: RoomId
    transport: Transport | None = None
    first_contact: bool = False
    synchronous: bool = False


class LevelOf(Contract):
    """`person`'s effective level where no room names one (their default, under the org's
    ceiling) and their window: what decides whether their agent's change to their own
    arrangement waits for them (hip-0528 §9.4 rule 2)."""

    org: OrgId
    person: UserId


class WhatApplies(Contract):
    """What applies to my agent's replies in `room` (one of mine), by `transport`."""

    room: RoomId | None = None
    transport: Transport | None = None


class Applies(Contract):
    """The effective level there, my window, and the setting that decided the level: my
    default, the transport's override, the room's, or my org's ceiling lowering it."""

    level: Level
    window: Window
    decided_by: Literal["default", "transport", "room", "ceiling"]


class Effective(Contract):
    level: Level
    window: Window
    ceiling: Level | None = None


class Decided(Contract):
    """`level` is the effective level (after the ceiling); `action` what happens: a draft,
    a confirmation, a send (after `window`), or silence on a live call."""

    level: Level
    action: Literal["draft", "confirm", "send", "silent"]
    window: Window | None
    reason: str


class Reply(DecideRequest, kw_only=True):
    """An agent's reply (one or more candidates) to message `reply_to`, to be decided and
    carried out."""

    reply_to: Seq
    candidates: Annotated[tuple[Text, ...], msgspec.Meta(min_length=1, max_length=5)]


class Routed(Contract, omit_defaults=True):
    """What became of a reply: a draft, a confirmation, a window (ending `due_at`), a
    message sent at once (`sent_seq`), or nothing, the person having answered themself
    while their agent drafted (`answered_by`, their message)."""

    decision: Decided
    draft: str | None = None
    confirmation: str | None = None
    window: str | None = None
    due_at: Instant | None = None
    sent_seq: Seq | None = None
    answered_by: Seq | None = None


class PendingWindow(Contract):
    """A send waiting out its window. `seconds_left` is as of the answer.

    `open` until its end or the person's act; then `sending` (its end came at send and the
    message is on its way, tried again while rooms is unreachable), `sent`, `canceled` (the
    level was lowered), `edited`, `replaced` or `stopped` (the person), or `failed` (every
    try to deliver it failed: nothing was sent)."""

    id: str
    org: str
    room: str
    reply_to: Seq
    text: str
    window: Window
    due_at: Instant
    state: Literal["open", "sending", "sent", "canceled", "edited", "replaced", "stopped", "failed"]
    notice_seq: Seq
    seconds_left: float = 0.0
    sent_seq: Seq | None = None


class ListWindows(Contract):
    pass


class WindowList(Contract):
    """My open windows, soonest first, as many as one answer carries (`more`: others wait
    behind them), and the last 20 that closed, newest first, each with how it ended (a send
    that failed says `failed`, never `sent`)."""

    windows: list[PendingWindow]
    closed: list[PendingWindow] = []
    more: bool = False


class WindowRef(Contract):
    id: WindowId


class WindowEdit(Contract):
    """During the window: send `text` as my own message instead (edit keeps the agent's
    draft as its origin; replace does not). Either cancels the agent's send."""

    id: WindowId
    text: Text


class PendingConfirmation(Contract):
    """A confirmation asked of me: question `question_seq` in `room`, still open. `actions`
    are what my answer may be, decline always among them, so no client need know it."""

    id: str
    room: str
    question_seq: Seq
    reply_to: Seq
    candidates: tuple[str, ...]
    actions: tuple[Literal["pick", "edit", "decline"], ...] = ("pick", "edit", "decline")


class ListConfirmations(Contract):
    pass


class ConfirmationList(Contract):
    """The oldest first, as many as one answer carries; `more`: others wait behind them."""

    confirmations: list[PendingConfirmation]
    more: bool = False


class ConfirmationAnswer(Contract):
    id: ConfirmationId
    choice: Choice


def _subject(verb: str, request: type, reply: type, summary: str, **fields: object) -> Subject:
    return request_subject("ladder", verb, request, reply, summary, **fields)


_AGENTS = {"callers": frozenset({"agents"}), "by_caller": True}

GET = _subject("get", GetLadder, MyLadder, "my ladder")
CHANGE = _subject("change", ChangeLevel, LadderChanged, "change my level at one scope")
WINDOW = _subject("window", ChangeWindow, LadderChanged, "choose my window")
CEILING = _subject("ceiling", SetCeiling, Ceiling, "lower the org's ceiling (admin)")
WINDOWS = _subject("windows", ListWindows, WindowList, "my open windows")
EDIT = _subject("edit", WindowEdit, PendingWindow, "edit a pending send: mine instead")
REPLACE = _subject("replace", WindowEdit, PendingWindow, "replace a pending send with mine")
STOP = _subject("stop", WindowRef, PendingWindow, "stop a pending send")
CONFIRMATIONS = _subject(
    "confirmations", ListConfirmations, ConfirmationList, "my open confirmations"
)
CONFIRM = _subject("confirm", ConfirmationAnswer, Routed, "answer a confirmation")
DECIDE = _subject(
    "decide",
    DecideRequest,
    Decided,
    "the decision for one reply",
    callers=frozenset({"agents", "rooms"}),
    by_caller=True,
)
ROUTE = _subject("route", Reply, Routed, "decide a reply and carry it out", **_AGENTS)
APPLIES = _subject("applies", WhatApplies, Applies, "what applies in a room, by a transport")
LEVEL = _subject(
    "level",
    LevelOf,
    Effective,
    "a person's level and window outside any room",
    callers=frozenset({"mod"}),
    by_caller=True,
)

CONTRACT = service_contract(
    "ladder",
    [
        GET,
        CHANGE,
        WINDOW,
        CEILING,
        WINDOWS,
        EDIT,
        REPLACE,
        STOP,
        CONFIRMATIONS,
        CONFIRM,
        DECIDE,
        ROUTE,
        LEVEL,
        APPLIES,
    ],
    buckets=("ladder",),
    shared_streams=("EVENTS", "TIMERS", "DEAD"),
    timer_targets=("window_end",),
)
