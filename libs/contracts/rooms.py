"""`tether.rooms.*`: rooms, their members and ordered history, drafts, confirmation
questions, and personal lines with their inbound webhooks.

Who wrote a message is never in a request: the author, its kind and the person an agent
acted for are set by the rooms service from the credential when it stores the message.
"""

import re
from typing import Annotated, Literal

import msgspec

from libs.contracts.base import (
    NOT_TEXT_CHARACTER,
    PRINTABLE,
    TEXT_CHARACTER,
    Contract,
    Count,
    Instant,
    Name,
    OrgId,
    Seq,
    UserId,
    key_token,
)
from libs.contracts.problem import Refused
from libs.contracts.registry import (
    Event,
    Subject,
    live_subject,
    request_subject,
    service_contract,
)
from libs.contracts.streams import StreamSpec

__all__ = [
    "ANSWER_OF",
    "ANSWER_STORED",
    "BOT_MESSAGE",
    "BOT_MESSAGE_READ",
    "CONTRACT",
    "LINE_MOST",
    "MESSAGE_STORED",
    "ORG",
    "OWN_ANSWER",
    "QUESTIONS",
    "SAID",
    "TEXT_MOST",
    "UNDRAFTED",
    "AnswerQuestion",
    "Answered",
    "Ask",
    "AskPerson",
    "BotMessage",
    "BotMessageRef",
    "Challenged",
    "ConnectLine",
    "CreateRoom",
    "Decline",
    "Deliver",
    "Delivered",
    "Delivery",
    "DisconnectLine",
    "DismissFailed",
    "Draft",
    "DraftList",
    "DraftRef",
    "Edit",
    "FailedDelivery",
    "FailedList",
    "FindAnswer",
    "FindOwnAnswer",
    "FoundAnswer",
    "History",
    "Inbound",
    "Line",
    "LineList",
    "ListDrafts",
    "ListFailed",
    "ListLines",
    "ListMessages",
    "ListMyDrafts",
    "ListQuestions",
    "ListRooms",
    "Member",
    "Message",
    "MessagePage",
    "MessageStored",
    "OwnAnswer",
    "Pick",
    "PostDraft",
    "Question",
    "QuestionList",
    "Room",
    "RoomId",
    "RoomList",
    "RoomRef",
    "Said",
    "Send",
    "SendDraft",
    "StatusReport",
    "Tell",
    "Transport",
    "Undrafted",
    "VerifyLine",
    "Withdraw",
    "check_line",
    "delivery_subject",
    "fitted",
    "fitted_to_line",
    "line_length",
    "line_most",
    "live_subjects",
]

RoomId = Annotated[str, msgspec.Meta(pattern=r"^[a-z]+-[0-9a-f]{16}$(?!\n)")]
DraftId = Annotated[str, msgspec.Meta(pattern=r"^d-[0-9a-f]{16}-[0-9]{1,19}$(?!\n)")]
TEXT_MOST = 16_000  # characters of a message
# What one message holds as its carrier takes it: Twilio an SMS body of at most 1,600
# characters (sent on as segments) and a <Say> of 4,096 (its basic voices'), Meta's Cloud
# API a WhatsApp text of 4,096. An email holds a whole message.
LINE_MOST = {"sms": 1_600, "voice": 4_096, "whatsapp": 4_096}
Text = Annotated[
    str, msgspec.Meta(min_length=1, max_length=TEXT_MOST, pattern=rf"^{TEXT_CHARACTER}+$(?!\n)")
]
# The key a service stores a message once by, and a service's bot, one token (`chonk-human`).
ServiceKey = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_.-]{1,120}$(?!\n)")]
BotName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,62}$(?!\n)")]
# One line a client draws as text: no control character can break it or hide in it.
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=rf"^{PRINTABLE}+$(?!\n)")]
Transport = Literal["sms", "email", "whatsapp", "voice"]
# A number as carriers write it: E.164.
E164 = Annotated[str, msgspec.Meta(pattern=r"^\+[1-9][0-9]{6,14}$(?!\n)")]
MemberKind = Literal["human", "agent", "bot"]
AuthorKind = MemberKind
# Addressed to the org (its ambient agent answers), rather than to a person.
ORG = "org"


class Member(Contract):
    """`id` is a user id for a person, `agent:…` or `bot:…` for the others, and
    `<transport>:<address>` for an outside correspondent on a personal line."""

    kind: MemberKind
    id: str


class Room(Contract):
    """A room in an org's store (`scope` org) or in a person's home-org scope (`personal`,
    `owner` that person). A line's rooms name their `transport` and `correspondent`."""

    id: str
    org: OrgId
    scope: Literal["org", "personal"]
    title: str
    members: tuple[Member, ...]
    created_at: Instant
    owner: str | None = None
    transport: Transport | None = None
    correspondent: str | None = None


class CreateRoom(Contract):
    """A room of the caller's org with the caller and `members`: people of that org (user
    ids `<org>/<name>`) and its bots (`bot:<org>:<name>`), as many as the org's plan allows
    (`room_members` in the catalog); each person's agent and the org's ambient agent join
    with them. `personal` makes a room of my own home-org scope, with me and my agent only."""

    title: Title
    members: Annotated[tuple[Name, ...], msgspec.Meta(max_length=10_000)] = ()
    scope: Literal["org", "personal"] = "org"


class RoomRef(Contract):
    id: RoomId


class ListRooms(Contract):
    """The rooms I am a member of, by room id, `limit` after the room id `after`."""

    after: RoomId | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50


class RoomList(Contract):
    """A page of rooms; `next` is the cursor of the page after it, null on the last."""

    rooms: list[Room]
    next: RoomId | None = None


class Pick(Contract, tag="pick"):
    option: Count


class Edit(Contract, tag="edit"):
    text: Text


class Decline(Contract, tag="decline"):
    pass


Choice = Pick | Edit | Decline


class Question(Contract, omit_defaults=True):
    """A confirmation question, answered in the room by `to`: pick one of `options`, edit,
    or decline. Decline is always offered and cannot be taken away, so every question has
    at least two buttons and declining is exactly one act, like picking. A service's
    question whose asker has nothing to do with other words (a Power-of-Action ask, a
    manager agent's proposal or offer) is not `editable`: an edit of it is refused, never
    read as a no. A question its asker stops waiting on at `closes_at` (a Power-of-Action
    ask, declined unanswered then) takes no answer after it: the person is told so, where an
    answer taken would change nothing."""

    options: tuple[str, ...]
    editable: bool = True
    closes_at: Instant | None = None


class Delivery(Contract, omit_defaults=True):
    """How a message that left by a line is faring: the carrier's id for it and the last
    status its signed status callback gave (`queued` when it was handed over); `error` is
    the carrier's reason for a failure."""

    transport: Transport
    carrier_id: str
    status: Literal["queued", "sent", "delivered", "failed"]
    at: Instant
    error: str | None = None


class Message(Contract, omit_defaults=True):
    """A stored message. `seq` orders the room's history and is its cursor.

    `author_kind` and `on_behalf_of` (the person an agent acted for) are the server's, set
    when the message was stored. `drafted_by` names the agent whose draft a person sent. A
    `notice` tells the person what their agent is about to do; it never leaves the room.
    A `private` message is for `to` alone (their agent's notice, its confirmation question
    and the answer): stored apart, in no one else's history or stream, on no line. An
    `automatic` one was sent with no person's act (RFC 3834): one that arrived by a line
    (an email's auto-reply, a list's or a bulk mail), which no agent answers, or the
    agent's own sent unattended, which leaves marked so.
    """

    seq: Count  # 0 until stored
    room: str
    at: Instant
    author: str
    author_kind: AuthorKind
    text: str
    on_behalf_of: str | None = None
    to: str | None = None
    reply_to: Seq | None = None
    drafted_by: str | None = None
    question: Question | None = None
    answers: Seq | None = None
    choice: Choice | None = None
    transport: Transport | None = None
    notice: bool = False
    private: bool = False
    automatic: bool = False
    delivery: Delivery | None = None  # read with it, for a message that left by a line


class Send(Contract):
    """Send `text` to room `id`, addressed `to` a member person, to `org`, or to no one.
    Who sends it comes from the token; a body naming a sender is refused."""

    id: RoomId
    text: Text
    to: str | None = None
    reply_to: Seq | None = None


class Ask(Contract):
    """Ask `to` (a person in the room) to pick one of `options` (one to ten), edit, or
    decline."""

    id: RoomId
    text: Text
    to: UserId
    options: Annotated[tuple[Text, ...], msgspec.Meta(min_length=1, max_length=10)]


class AnswerQuestion(Contract):
    """Answer question `seq` of room `id`: pick an option, send an edited text, or decline.
    Each is one act; only the person asked may answer, once."""

    id: RoomId
    seq: Seq
    choice: Choice


class ListMessages(Contract):
    """The room's messages after seq `after`, oldest first, at most `limit`."""

    id: RoomId
    after: Count = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50


class MessagePage(Contract):
    """`next` is the cursor to pass as `after` for more; None when there is no more now."""

    messages: list[Message]
    next: Seq | None = None


class Draft(Contract):
    """An agent's reply held for its person (or, for the ambient agent, the org's admins),
    who may send it; nothing left the room. `sending`: a send of it is on its way, and it
    can no longer be discarded; if that send failed, sending it again completes it.
    `answered`: the person answered the message themself (`answered_by`, their message),
    so the draft of a reply to it was let go."""

    id: str
    room: str
    org: str
    agent: str
    person: str
    reply_to: Seq
    text: str
    first_contact: bool
    state: Literal["open", "sending", "sent", "discarded", "answered"]
    created_at: Instant
    sent_seq: Seq | None = None
    answered_by: Seq | None = None


class ListDrafts(Contract):
    id: RoomId


class DraftList(Contract):
    """The oldest first, as many as one answer carries; `more`: others wait behind them."""

    drafts: list[Draft]
    more: bool = False


class ListMyDrafts(Contract):
    """My agent's open drafts in every room of mine."""


class DraftRef(Contract):
    id: RoomId
    draft: DraftId


class SendDraft(Contract):
    """Send my agent's draft as my own message, or `text` in its place."""

    id: RoomId
    draft: DraftId
    text: Text | None = None


class ConnectLine(Contract):
    """Connect my own line: `address` is the E.164 number or email address that receives,
    `credential` the carrier's signing secret for it (stored encrypted, never shown back)."""

    transport: Transport
    address: Annotated[str, msgspec.Meta(min_length=3, max_length=254)]
    credential: Annotated[str, msgspec.Meta(min_length=8, max_length=512)]
    forward_to: E164 | None = None  # voice: where a call the agent does not take rings


class Line(Contract):
    """A person's line. `pending` until its owner proves it with the code sent to it; only
    a `connected` line receives."""

    transport: Transport
    address: str
    state: Literal["pending", "connected"]
    connected_at: Instant | None = None
    # A WhatsApp line's: what its person sets as the verify token of Meta's callback URL.
    verify_token: str | None = None


class VerifyLine(Contract):
    """The code the line's transport delivered to its address, within 10 minutes."""

    transport: Transport
    code: Annotated[str, msgspec.Meta(pattern=r"^[0-9]{6}$(?!\n)")]


class ListLines(Contract):
    pass


class LineList(Contract):
    lines: list[Line]


class DisconnectLine(Contract):
    transport: Transport


class Inbound(Contract):
    """A carrier's webhook as it arrived: the URL it called, its signature header, the raw
    body. The rooms service verifies it with the line's own credential."""

    transport: Transport
    url: str
    signature: str = ""
    content_type: str = ""
    body: str = ""


class Answered(Contract):
    """A live call (or the voicemail it left), in the person's room as `seq`: what the
    carrier is told to do with it (TwiML), and whether the agent spoke (`spoken_seq`, its
    message)."""

    room: str
    seq: Seq
    twiml: str
    spoken_seq: Seq | None = None


class StatusReport(Contract):
    """What a carrier's status callback changed: message `seq` of `room`, now `status`."""

    room: str
    seq: Seq
    status: Literal["queued", "sent", "delivered", "failed"]


class FailedDelivery(Contract):
    """A message of mine that left by my line and did not arrive: it waits on me."""

    room: str
    seq: Seq
    text: str
    delivery: Delivery


class ListFailed(Contract):
    """My messages whose delivery failed, not yet dismissed."""


class FailedList(Contract):
    """The oldest first, as many as one answer carries; `more`: others wait behind them."""

    failed: list[FailedDelivery]
    more: bool = False


class ListQuestions(Contract):
    """The questions asked of me in my rooms that wait on my answer: a person's, or a
    service's bot's (a manager agent's proposal or offer). My own agent's (the ladder's
    confirmations, Power of Action's asks) are listed by the service that asked, with what
    answering them does."""


class QuestionList(Contract):
    """The oldest first, as many as one answer carries; `more`: others wait behind them."""

    questions: list[Message]
    more: bool = False


class DismissFailed(Contract):
    id: RoomId
    seq: Seq


class Challenged(Contract):
    """Meta's subscription handshake answered: the challenge it sent, said back."""

    challenge: str


class Delivered(Contract):
    """What a carrier's webhook stored: its (first) message, `seq` of `room`, and how many
    messages and statuses it held (Meta batches them, and may send statuses alone)."""

    room: str | None = None
    seq: Seq | None = None
    first_contact: bool = False
    messages: Count = 1
    statuses: Count = 0


class History(Contract):
    """The agents service reads the one room it answers in, up to and including `upto`."""

    org: OrgId
    room: RoomId
    upto: Seq
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 20


class PostDraft(Contract):
    """The agents service's reply to message `reply_to`; the rooms service decides whose
    draft it is from who that message was addressed to, never from this request."""

    org: OrgId
    room: RoomId
    reply_to: Seq
    agent: str
    text: Text


class Deliver(Contract):
    """The ladder carries out what a person's ladder decided, in a room of that person:

    `message`  the agent's reply, sent on the person's behalf (and out by their line);
    `notice`   what the agent is about to send, told to the person first;
    `question` a confirmation to the person, with `options`;
    `own`      the person's own text in place of their agent's (`drafted_by` the agent
               when it is an edit of the agent's).
    `key` makes a repeat store nothing more. The agent is always the person's own.
    `unattended`: a message sent with no one asked (instant, or at a window's end), stored
    `automatic`, and marked so where it leaves (an email's `Auto-Submitted: auto-replied`,
    RFC 3834 §5), so that the other side's responders do not answer it in turn.
    """

    org: OrgId
    room: RoomId
    person: UserId
    kind: Literal["message", "notice", "question", "own"]
    text: Text
    key: ServiceKey
    reply_to: Seq | None = None
    options: tuple[Text, ...] = ()
    edited: bool = False
    unattended: bool = False


class Undrafted(Contract):
    """From the agents service: every try of `person`'s own agent to draft its reply to
    message `reply_to` failed (a model down longer than its reader retries, say). They are
    told, alone, by a notice answering that message, stored once: otherwise they would
    wait for a reply that does not come."""

    org: OrgId
    room: RoomId
    person: UserId
    reply_to: Seq
    text: Text


class FindOwnAnswer(Contract):
    """Whether `person` has answered message `answered` of `room` themself since (hip-0524
    §5: their own words take the place of their agent's send): the first message they
    wrote after it and before their agent's reply to it, in a room of two sides (a line's,
    or two people's) whatever they said, elsewhere a reply to that message. Asked by the
    ladder before a send, at once or as a window ends."""

    org: OrgId
    room: RoomId
    person: UserId
    answered: Seq


class OwnAnswer(Contract):
    seq: Seq | None = None  # the person's own message, if there is one


class Withdraw(Contract):
    """From the service that asked: question `seq` of `room`, asked of `person` alone by
    their own agent, takes no answer now, the asking undone by someone else (an admin who
    removed the agent it asked for). Their agent tells them so, alone, with `text`, in the
    question's answer's place, stored once; answered first, the answer stands."""

    org: OrgId
    person: UserId
    room: RoomId
    seq: Seq
    text: Text


class FindAnswer(Contract):
    """The answer `person` gave question `seq` of `room`, asked of them alone, if any:
    asked by the service that asked it as the question's time runs out (an ask's expiry,
    a chase's next stage), so an answer given in time counts however late its event is
    read."""

    org: OrgId
    room: RoomId
    person: UserId
    seq: Seq


class FoundAnswer(Contract):
    choice: Choice | None = None  # the person's answer, if they gave one


class AskPerson(Contract):
    """A question from a person's own agent to them alone, in their own room (the person and
    their agent; made the first time). `key` stores it once."""

    org: OrgId
    person: UserId
    text: Text
    options: Annotated[tuple[Text, ...], msgspec.Meta(min_length=2, max_length=10)]
    key: ServiceKey
    closes_at: Instant | None = None  # after it, the question takes no answer


class _InThread(Contract):
    """A message in the room `person` shares with a service's bot (`bot`, one token:
    `chonk-human`) alone, made the first time, titled `title`; `key` stores it once."""

    org: OrgId
    person: UserId
    bot: BotName
    title: Title
    text: Text
    key: ServiceKey


class Tell(_InThread):
    """The bot tells `person` `text` in their thread; with `options`, it asks them to pick
    one, until `closes_at` if given."""

    options: Annotated[tuple[Text, ...], msgspec.Meta(max_length=10)] = ()
    closes_at: Instant | None = None  # after it, the question takes no answer


class MessageStored(Contract):
    """A message was stored. `answerer` is the one agent that answers it, if any: the
    person's agent for a message to that person, the org's for one to the org."""

    org: str
    room: str
    seq: Seq
    author_kind: AuthorKind
    to: str | None
    answerer: str | None
    first_contact: bool
    transport: Transport | None = None
    answers: Seq | None = None
    choice: Choice | None = None


class BotMessage(Contract):
    """A person wrote in the room they share with a service's bot alone (a manager agent):
    where, and who, for the bot's service to read with `BOT_MESSAGE_READ`. The words are
    never carried on the bus."""

    org: str
    room: str
    seq: Seq
    author: str
    bot: str


class Said(_InThread):
    """What `person` said to the bot through its service (a manager agent's
    `POST /v1/chonk/messages`), stored as theirs in their thread, so it reads as it was
    said. Its service read it as it came: nothing is raised for it to read again."""


class BotMessageRef(Contract):
    """Message `seq` of `room`, which a person wrote in the room they share with a bot."""

    org: OrgId
    room: RoomId
    seq: Seq


def delivery_subject(room: str) -> str:
    """Where a room's delivery updates are heard live, `{seq, delivery}`. Its last token is
    never a reader's: a reader's always holds a `/` (a person, their agent) or an escaped
    `:` (a bot)."""
    return live_subject("rooms", room, "delivery")


def fitted(text: str, most: int = TEXT_MOST) -> str:
    """`text` cut to `most` characters, the last an ellipsis where it was cut: what a
    message (or a part of one, quoting it) holds of it, less any character a message's
    text may not hold."""
    text = _NOT_TEXT.sub("", text)
    return text if len(text) <= most else text[: most - 1] + "…"


_NOT_TEXT = re.compile(NOT_TEXT_CHARACTER)


def line_most(transport: str | None) -> int:
    """The characters a message holds at most where it leaves by `transport`."""
    return LINE_MOST.get(transport or "", TEXT_MOST)


# GSM 03.38's default alphabet, and its extension table, whose characters take two septets.
_GSM7 = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
_GSM7_EXTENDED = frozenset("^{}\\[~]|€")


def line_length(transport: str | None, text: str) -> int:
    """`text`'s characters as the carrier of `transport` counts them against `line_most`.
    Twilio counts an SMS as it is sent: in GSM-7, where `€`, `[` and the like take two; or,
    once one character is not GSM-7, in UCS-2's 16-bit units, where an emoji takes two."""
    if transport != "sms":
        return len(text)
    if all(c in _GSM7 or c in _GSM7_EXTENDED for c in text):
        return len(text) + sum(c in _GSM7_EXTENDED for c in text)
    return len(text.encode("utf-16-le")) // 2


def fitted_to_line(text: str, transport: str | None) -> str:
    """`text` as `fitted` makes it, and cut to what leaves whole by `transport`, the last
    character an ellipsis where it was cut."""
    if transport != "sms":
        return fitted(text, line_most(transport))
    text = fitted(text)
    if line_length(transport, text) <= (most := line_most(transport)):
        return text
    # The ellipsis is no GSM-7 character: the text cut is sent, and counted, in UCS-2, where
    # a GSM-7 text too long for its `€`s may fit whole; its last character then gives way.
    kept, used = [], 1
    for c in text:
        used += 2 if ord(c) > 0xFFFF else 1
        if used > most:
            break
        kept.append(c)
    else:
        kept.pop()
    return "".join(kept) + "…"


def check_line(transport: str | None, text: str) -> None:
    """Refused, before anything is stored, where `text` would leave by a line that cannot
    carry it whole: the carrier would refuse it after the room said it was sent."""
    if (length := line_length(transport, text)) > (most := line_most(transport)):
        counted = (
            " as the carrier counts them (in GSM-7, `€`, `[` and the like are two; with one "
            "character that is not, each emoji is two)"
            if transport == "sms"
            else ""
        )
        raise Refused(
            "too-long-for-line",
            422,
            f"a message that leaves by {transport} holds at most {most:,} characters{counted}; "
            f"this one has {length:,}",
        )


def live_subjects(room: str, reader: str) -> tuple[str, str]:
    """What a reader of `room` hears live: what its members hear, and what is for them alone."""
    return live_subject("rooms", room), live_subject("rooms", room, key_token(reader))


def _subject(verb: str, request: type, reply: type, summary: str, **fields: object) -> Subject:
    return request_subject("rooms", verb, request, reply, summary, **fields)


_AGENTS = {"callers": frozenset({"agents"}), "by_caller": True}
_LADDER = {"callers": frozenset({"ladder"}), "by_caller": True}

CREATE = _subject("create", CreateRoom, Room, "create a room")
LIST = _subject("list", ListRooms, RoomList, "the rooms I am a member of")
GET = _subject(
    "get",
    RoomRef,
    Room,
    "a room I am a member of",
    callers=frozenset({"gateway", "ladder"}),
)
MESSAGES = _subject("messages", ListMessages, MessagePage, "a room's messages after a cursor")
SEND = _subject("send", Send, Message, "send a message to a room")
ASK = _subject("ask", Ask, Message, "ask a confirmation question in a room")
ANSWER = _subject(
    "answer",
    AnswerQuestion,
    Message,
    "answer a confirmation question",
    callers=frozenset({"gateway", "ladder", "poa"}),
)
DRAFTS = _subject("drafts", ListDrafts, DraftList, "my agent's open drafts in a room")
MY_DRAFTS = _subject("my_drafts", ListMyDrafts, DraftList, "my agent's open drafts, every room")
SEND_DRAFT = _subject("send_draft", SendDraft, Message, "send a draft as my message")
DISCARD_DRAFT = _subject("discard_draft", DraftRef, Draft, "discard a draft")
CONNECT = _subject("connect", ConnectLine, Line, "claim my own line; a code is sent to it")
VERIFY_LINE = _subject("verify_line", VerifyLine, Line, "prove my line with the code it got")
LINES = _subject("lines", ListLines, LineList, "my lines")
DISCONNECT = _subject("disconnect", DisconnectLine, Line, "disconnect my line")
INBOUND = _subject("inbound", Inbound, Delivered, "a carrier's signed webhook", public=True)
CALL = _subject("call", Inbound, Answered, "a carrier's signed inbound call", public=True)
VOICEMAIL = _subject(
    "voicemail", Inbound, Answered, "a call's recorded voicemail, signed", public=True
)
STATUS = _subject(
    "status", Inbound, StatusReport, "a carrier's signed status callback", public=True
)
CHALLENGE = _subject(
    "challenge", Inbound, Challenged, "Meta's handshake for a line's callback URL", public=True
)
FAILED = _subject("failed", ListFailed, FailedList, "my messages whose delivery failed")
QUESTIONS = _subject(
    "questions", ListQuestions, QuestionList, "the questions that wait on my answer"
)
DISMISS = _subject("dismiss", DismissFailed, FailedDelivery, "dismiss a failed delivery")
HISTORY = _subject("history", History, MessagePage, "one room's recent history", **_AGENTS)
POST_DRAFT = _subject(
    "post_draft",
    PostDraft,
    Draft,
    "an agent's reply, held as a draft",
    callers=frozenset({"agents", "ladder"}),
    by_caller=True,
)
DELIVER = _subject("deliver", Deliver, Message, "what a person's ladder decided", **_LADDER)
TELL = _subject(
    "tell",
    Tell,
    Message,
    "a service's bot tells a person, in the room it shares with them",
    callers=frozenset({"chonk"}),
    by_caller=True,
)
UNDRAFTED = _subject(
    "undrafted", Undrafted, Message, "tell a person their agent could not reply", **_AGENTS
)
OWN_ANSWER = _subject(
    "own_answer",
    FindOwnAnswer,
    OwnAnswer,
    "whether a person answered a message themself",
    **_LADDER,
)
ANSWER_OF = _subject(
    "answer_of",
    FindAnswer,
    FoundAnswer,
    "the answer a person gave a question asked of them alone",
    callers=frozenset({"poa", "chonk"}),
    by_caller=True,
)
SAID = _subject(
    "said",
    Said,
    Message,
    "what a person said to a service's bot through it, stored in the room they share",
    callers=frozenset({"chonk"}),
    by_caller=True,
)
BOT_MESSAGE_READ = _subject(
    "bot_message",
    BotMessageRef,
    Message,
    "what a person wrote in the room they share with a service's bot",
    callers=frozenset({"chonk"}),
    by_caller=True,
)
WITHDRAW = _subject(
    "withdraw",
    Withdraw,
    Message,
    "withdraw a question asked of a person alone: their agent tells them, in its answer's place",
    callers=frozenset({"poa"}),
    by_caller=True,
)
ASK_PERSON = _subject(
    "ask_person",
    AskPerson,
    Message,
    "ask a person alone, in their own room",
    callers=frozenset({"poa"}),
    by_caller=True,
)

MESSAGE_STORED = Event(
    "tether.evt.rooms.message.stored",
    MessageStored,
    "a message was stored in a room; its answerer, if any, may draft a reply",
    readers=frozenset({"agents"}),
)
ANSWER_STORED = Event(
    "tether.evt.rooms.answer.stored",
    MessageStored,
    "a confirmation question's answer was stored in a room (`answers`, `choice`)",
    readers=frozenset({"ladder", "poa", "chonk"}),
)

BOT_MESSAGE = Event(
    "tether.evt.rooms.bot_message.stored",
    BotMessage,
    "a person wrote in the room they share with a service's bot; that service reads it",
    readers=frozenset({"chonk"}),
)

# Each room's history on `rooms.msg.<org>.<room>`, and what left through a transport on
# `rooms.outbound.<transport>.<org>` (the recording adapter's record).
ROOMS = StreamSpec(
    "ROOMS",
    ("rooms.msg.>", "rooms.private.>", "rooms.outbound.>"),
    "room histories and outbound",
    # A retried send (a fire after a crash, a carrier's retry) is recognised this long.
    duplicate_window_s=3600,
)

CONTRACT = service_contract(
    "rooms",
    [
        CREATE,
        LIST,
        GET,
        MESSAGES,
        SEND,
        ASK,
        ANSWER,
        DRAFTS,
        MY_DRAFTS,
        SEND_DRAFT,
        DISCARD_DRAFT,
        CONNECT,
        VERIFY_LINE,
        LINES,
        DISCONNECT,
        INBOUND,
        CALL,
        VOICEMAIL,
        STATUS,
        CHALLENGE,
        FAILED,
        DISMISS,
        QUESTIONS,
        HISTORY,
        POST_DRAFT,
        DELIVER,
        OWN_ANSWER,
        ANSWER_OF,
        ASK_PERSON,
        WITHDRAW,
        TELL,
        SAID,
        BOT_MESSAGE_READ,
        UNDRAFTED,
    ],
    events=(MESSAGE_STORED, ANSWER_STORED, BOT_MESSAGE),
    buckets=("rooms", "rooms-lines"),
    streams=(ROOMS,),
)
