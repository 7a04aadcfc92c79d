"""A message as stored: its author, authoring kind and on-behalf person are the server's,
taken from the credential at the moment of storing (hip-0524 §7)."""

from collections.abc import Callable
from datetime import datetime

import msgspec

from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.rooms import (
    ORG,
    BotMessage,
    Choice,
    Member,
    Message,
    MessageStored,
    Question,
    Room,
    Transport,
    live_subjects,
)
from services.rooms.domain.lines import answerable
from services.rooms.domain.members import answerer, caller, is_member, personal_agent_id

__all__ = [
    "alone",
    "answer_alone",
    "authored",
    "check_sender",
    "check_to",
    "heard_on",
    "inbound",
    "own_answer",
    "replied",
    "same",
    "stored",
    "to_bot",
]


def authored(
    room: Room,
    p: Principal,
    text: str,
    now: datetime,
    *,
    to: str | None = None,
    reply_to: int | None = None,
    drafted_by: str | None = None,
    question: Question | None = None,
    answers: int | None = None,
    choice: Choice | None = None,
    automatic: bool = False,
) -> Message:
    author = caller(p)
    if not is_member(room, author.id):
        raise Refused("room-not-found", 404, f"no room {room.id}")
    check_to(room, to, author.id)
    return Message(
        seq=0,
        room=room.id,
        at=now,
        author=author.id,
        author_kind=author.kind,
        on_behalf_of=p.sub if p.is_agent else None,
        text=text,
        to=to,
        reply_to=reply_to,
        drafted_by=drafted_by,
        question=question,
        answers=answers,
        choice=choice,
        automatic=automatic,
    )


def check_sender(p: Principal, *, asks: str | None = None) -> None:
    """A person's own agent says nothing in a room by itself, to anyone but its person:
    what it says is its reply to a message said to its person, which their ladder decides
    (hip-0524 §4: at `draft`, the default, it cannot send). It may ask its person a
    question (`asks`), which stays in the room. An org's agents and bots answer to the org,
    and post as themselves."""
    if p.is_own_agent and asks != p.sub:
        raise Refused(
            "ladder-decides",
            403,
            "a person's own agent posts nothing itself and asks only its person: its replies "
            "are its person's ladder's to send, hold as a draft or ask about",
        )


def check_to(room: Room, to: str | None, author: str) -> None:
    """A message is addressed to a person in the room, to the org (in an org room), or to
    no one."""
    if to is None:
        return
    if to == ORG:
        if room.scope != "org":
            raise Refused("invalid-to", 422, "only an org room has the org to address")
        return
    if to == author:
        raise Refused("invalid-to", 422, "a message is not addressed to its own author")
    if not any(m.id == to and m.kind == "human" for m in room.members):
        raise Refused("invalid-to", 422, f"{to!r} is not a person in this room")


def inbound(
    room: Room,
    correspondent: str,
    text: str,
    transport: Transport,
    now: datetime,
    owner: str,
    *,
    automatic: bool = False,
) -> Message:
    """What arrived on a person's line, from the outside person, to that person."""
    return Message(
        seq=0,
        room=room.id,
        at=now,
        author=correspondent,
        author_kind="human",
        text=text,
        to=owner,
        transport=transport,
        automatic=automatic,
    )


def alone(message: Message) -> Message:
    """What a person's own agent tells the person (the notice before a send, a confirmation
    question) is for that person alone, even in a room they share: the people they talk to
    see only what is sent."""
    own_agent = message.author_kind == "agent" and message.on_behalf_of == message.to
    if message.to is not None and (message.notice or (own_agent and message.question)):
        return msgspec.structs.replace(message, private=True)
    return message


def same(stored: Message, asked: Message) -> bool:
    """Whether `stored` is the message `asked` for, but for when it was stored."""
    return msgspec.structs.replace(stored, seq=asked.seq, at=asked.at) == asked


def answer_alone(answer: Message, asked: Message) -> Message:
    """The answer to a question for one person alone is theirs alone too."""
    if not asked.private:
        return answer
    return msgspec.structs.replace(answer, private=True, to=asked.to)


def stored(
    room: Room, message: Message, *, first_contact: bool, opted_out: bool = False
) -> MessageStored:
    """The event a stored message raises: for its answerer (the agents service) and, for an
    answer, the ladder. No agent answers a correspondent no line can answer (a short
    code) or one who opted out of what it sends them: its reply could only fail; nor
    what was sent automatically (RFC 3834), which a reply would only answer again."""
    line, them = room.transport, room.correspondent
    unanswerable = (
        opted_out
        or message.automatic
        or (line is not None and them is not None and not answerable(line, them))
    )
    return MessageStored(
        org=room.org,
        room=room.id,
        seq=message.seq,
        author_kind=message.author_kind,
        to=message.to,
        answerer=None if unanswerable else answerer(room, message),
        first_contact=first_contact,
        transport=room.transport,
        answers=message.answers,
        choice=message.choice,
    )


def to_bot(room: Room, message: Message) -> BotMessage | None:
    """What a person's own message (not an answer, which its question's asker reads) in the
    room they share with a bot alone raises for the bot's service. In a room of others, what
    they say is to the others: no bot's service reads it."""
    match sorted(room.members, key=lambda m: m.kind):
        case [Member(kind="bot", id=bot), Member(kind="human", id=person)]:
            pass
        case _:
            return None
    if message.author != person or message.answers is not None or message.private:
        return None
    return BotMessage(org=room.org, room=room.id, seq=message.seq, author=person, bot=bot)


def heard_on(message: Message) -> str:
    """The live subject a stored message is heard on: its room's, or, for a message for
    one person alone, that person's own."""
    members_hear, alone_hears = live_subjects(message.room, message.to or "")
    return alone_hears if message.private else members_hear


def own_answer(room: Room, person: str, answered: int) -> Callable[[Message], bool]:
    """Whether a message is `person`'s own answer to message `answered`: written by them
    (not their agent), in the room's hearing (not a notice, a question's answer or for one
    alone); in a room of two sides (a line's, or two people's) whatever they said, elsewhere
    a reply to that message."""
    two_sides = room.transport is not None or sum(m.kind == "human" for m in room.members) == 2

    def answers(message: Message) -> bool:
        return (
            message.author == person
            and message.author_kind == "human"
            and not (message.private or message.notice or message.answers is not None)
            and (two_sides or message.reply_to == answered)
        )

    return answers


def replied(person: str, answered: int) -> Callable[[Message], bool]:
    """Whether a message is `person`'s agent's reply to message `answered`, said in the
    room's hearing. After it, what the person says answers their agent, not that message."""

    def by_their_agent(message: Message) -> bool:
        return (
            message.author == personal_agent_id(person)
            and message.reply_to == answered
            and not (message.private or message.notice or message.question is not None)
        )

    return by_their_agent
