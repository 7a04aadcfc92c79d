"""A confirmation asked of the person, and what their answer sends (hip-0524 §6).

The first answer stands, however it came (in the room, or through the API): a later one
changes nothing, and what leaves is read from the stored answer, never from the later one.
What an answer sends and could not send (refused, or every try failed) is `unsent`, with
why: nothing was sent for it, and nothing will be, however often the answer comes again.
"""

from typing import Literal

import msgspec

from libs.contracts.rooms import Choice, Decline, Deliver, Edit, Pick

__all__ = ["UNSENT_NOTICE", "Confirmation", "answer", "carried_out", "reply", "unsent"]

# True alike of a send refused and of one whose every try failed; the why is in the trail.
UNSENT_NOTICE = (
    "I could not send what you chose here, so nothing was sent for it. "
    "If it needs an answer, answer it yourself."
)

Outcome = Literal["open", "picked", "edited", "declined"]
_OUTCOME: dict[type, Outcome] = {Pick: "picked", Edit: "edited", Decline: "declined"}


class Confirmation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    org: str
    room: str
    person: str
    question_seq: int
    reply_to: int
    candidates: tuple[str, ...]
    state: Outcome = "open"
    answer: Choice | None = None
    sent_seq: int | None = None
    unsent: str | None = None  # why what the answer sends was not sent


def answer(confirmation: Confirmation, choice: Choice) -> Confirmation:
    if confirmation.state != "open":
        return confirmation
    return msgspec.structs.replace(confirmation, state=_OUTCOME[type(choice)], answer=choice)


def reply(confirmation: Confirmation) -> Deliver | None:
    """What the answer sends into the room: the picked candidate as the agent's message,
    the person's edit as their own; nothing for a decline or no answer yet."""
    c = confirmation
    if c.unsent is not None:
        return None
    match c.answer:
        case Pick(option=i) if i < len(c.candidates):
            kind, key, text, edited = "message", f"picked-{c.id}", c.candidates[i], False
        case Edit(text=text):
            kind, key, edited = "own", f"edited-{c.id}", True
        case _:
            return None
    return Deliver(
        org=c.org,
        room=c.room,
        person=c.person,
        kind=kind,
        text=text,
        key=key,
        reply_to=c.reply_to,
        edited=edited,
    )


def carried_out(confirmation: Confirmation, sent_seq: int) -> Confirmation:
    """The room stored what the answer sends as `sent_seq`."""
    return msgspec.structs.replace(confirmation, sent_seq=sent_seq)


def unsent(confirmation: Confirmation, why: str) -> Confirmation:
    """What the answer sends could not be sent; a confirmation whose answer sends nothing,
    or sent it already, is as it was."""
    c = confirmation
    if c.sent_seq is not None or c.unsent is not None or reply(c) is None:
        return c
    return msgspec.structs.replace(c, unsent=why)
