"""An agent's draft: held for its person, then sent as the person's own message,
discarded, or let go once the person answered the message themself; once closed it never
opens again. A send claims it first (`sending`), so a
discard at the same moment is refused rather than told it won while the message left."""

from datetime import datetime

import msgspec

from libs.contracts.problem import Refused
from libs.contracts.rooms import ORG, Draft, Message, Room
from services.rooms.domain import messages

__all__ = [
    "WAITING",
    "answered",
    "answers",
    "claimed",
    "discarded",
    "draft_id",
    "drafted",
    "reopened",
    "sendable",
    "sent",
    "sent_as",
]


# What waits on its person: a draft, or one whose send failed on its way, to send again.
# Any other has closed, and is kept only a while.
WAITING = ("open", "sending")


def draft_id(room_id: str, reply_to: int) -> str:
    """One draft per message answered, so a repeated post finds the one already held."""
    return f"d-{room_id.split('-', 1)[1]}-{reply_to}"


def drafted(
    room: Room, asked: Message, agent: str, text: str, *, first_contact: bool, now: datetime
) -> Draft:
    """The answerer's draft of a reply to `asked`, held for whom `asked` was addressed to
    (the org's admins for a message to the org)."""
    return Draft(
        id=draft_id(room.id, asked.seq),
        room=room.id,
        org=room.org,
        agent=agent,
        person=asked.to or ORG,
        reply_to=asked.seq,
        text=text,
        first_contact=first_contact,
        state="open",
        created_at=now,
    )


def sendable(draft: Draft) -> Draft:
    if draft.state != "open":
        raise Refused("draft-closed", 409, f"draft {draft.id} was {draft.state}")
    return draft


def claimed(draft: Draft) -> Draft:
    """Claimed by a send, before its message is stored; a send asked again completes one
    already `sending` (its first try failed, or died, on the way)."""
    if draft.state == "sending":
        return draft
    return msgspec.structs.replace(sendable(draft), state="sending")


def reopened(draft: Draft) -> Draft:
    """The person's again: its send was refused before anything was stored."""
    if draft.state != "sending":
        return draft
    return msgspec.structs.replace(draft, state="open")


def sent(draft: Draft, seq: int) -> Draft:
    """Sent as message `seq`; a draft already closed stays as it is."""
    if draft.state not in ("open", "sending"):
        return draft
    return msgspec.structs.replace(draft, state="sent", sent_seq=seq)


def sent_as(draft: Draft, message: Message) -> bool:
    """Whether `message` is what a send of `draft` stored: what its agent drafted, in reply
    to the message it answers (one draft answers a message)."""
    return message.drafted_by == draft.agent and message.reply_to == draft.reply_to


def answers(room: Room, draft: Draft, message: Message) -> bool:
    """Whether `message` is the draft's person's own answer to what it replies to: written
    after it, by them (`messages.own_answer`), as a reply to that very message, or, in a
    room of two sides, replying to nothing in particular. A reply to another message
    answers that one only: a person replying to each of several in turn keeps the drafts
    for the rest."""
    if message.seq <= draft.reply_to:
        return False
    if not messages.own_answer(room, draft.person, draft.reply_to)(message):
        return False
    return message.reply_to in (None, draft.reply_to)


def answered(draft: Draft, seq: int) -> Draft:
    """The person answered the message themself, as their message `seq`: their agent's
    draft of a reply to it would be a second answer, after theirs. One no longer open (sent,
    discarded, or on its way) is as it was."""
    if draft.state != "open":
        return draft
    return msgspec.structs.replace(draft, state="answered", answered_by=seq)


def discarded(draft: Draft) -> Draft:
    return msgspec.structs.replace(sendable(draft), state="discarded")
