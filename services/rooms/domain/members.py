"""Who is in a room, who may read it, and which agent answers a message (hip-0524 §10)."""

import hashlib
from collections.abc import Iterable
from datetime import datetime

import msgspec

from libs.contracts.base import home_org
from libs.contracts.chonk import is_chonk_bot
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.rooms import ORG, CreateRoom, Member, Message, Room

__all__ = [
    "ambient_id",
    "answerer",
    "bot_room",
    "caller",
    "is_member",
    "new_room",
    "own_room",
    "personal_agent_id",
    "readable_in",
    "without",
]


def personal_agent_id(user: str) -> str:
    return f"agent:{user}"


def own_room(org: str, person: str, now: datetime) -> Room:
    """A person and their own agent, alone: where the agent asks what only they may answer
    (a PoA ask). The same person always has the same one."""
    digest = hashlib.sha256(f"{org}\0{person}".encode()).hexdigest()[:16]
    return Room(
        id=f"own-{digest}",
        org=org,
        scope="personal",
        title="My agent",
        members=(
            Member(kind="human", id=person),
            Member(kind="agent", id=personal_agent_id(person)),
        ),
        created_at=now,
        owner=person,
    )


def bot_room(org: str, person: str, bot: str, title: str, now: datetime) -> Room:
    """A person and one bot of their org (a manager agent), alone: the same pair always
    has the same one."""
    digest = hashlib.sha256(f"{org}\0{person}\0{bot}".encode()).hexdigest()[:16]
    return Room(
        id=f"bot-{digest}",
        org=org,
        scope="personal",
        title=title,
        members=(Member(kind="human", id=person), Member(kind="bot", id=bot)),
        created_at=now,
        owner=person,
    )


def ambient_id(org: str) -> str:
    return f"agent:{org}"


def caller(p: Principal) -> Member:
    """The member a request comes from: the agent where the token has one, else the person."""
    if p.act is None:
        return Member(kind="human", id=p.sub)
    return Member(kind="bot" if p.act.startswith("bot:") else "agent", id=p.act)


def is_member(room: Room, member_id: str) -> bool:
    return any(m.id == member_id for m in room.members)


def without(room: Room | None, member_id: str) -> Room | None:
    """The room with `member_id` no longer among its members."""
    if room is None:
        return None
    kept = tuple(m for m in room.members if m.id != member_id)
    return msgspec.structs.replace(room, members=kept)


def by_what_it_is(org: str, member: str) -> bool:
    """Whether `member` is in its rooms by what it is, not by whom it was made as, and so
    stays in them when an agent of its id is removed: the org's ambient agent, in every room
    of the org, and a Chonk's bot, in the rooms it shares with each person."""
    return member == ambient_id(org) or is_chonk_bot(org, member)


def of_removed(room: Room, made_again_at: datetime) -> bool:
    """Whether a removed agent's id in `room` is the removed one's, an agent having been
    made again under the id at `made_again_at`: a room made after that is the new one's."""
    return room.created_at < made_again_at


def readable_in(room: Room, p: Principal) -> bool:
    """A room is reached from a token of its own org, or of the home org its scope is in."""
    return room.org in (p.org, home_org(p.sub))


def new_room(
    request: CreateRoom, p: Principal, room_id: str, now: datetime, *, max_members: int
) -> Room:
    """An org room holds people and bots of that org only, up to the plan's number: people
    elsewhere are reached through their own lines, never by joining another org's room."""
    if p.is_agent:
        raise Refused("agent-may-not", 403, "an agent may not create rooms")
    if request.scope == "personal":
        org = home_org(p.sub)
        if org is None:
            raise Refused("no-home-org", 403, f"{p.sub!r} has no home org for a personal room")
        if request.members:
            raise Refused(
                "personal-room-members", 422, "a personal room has you and your agent only"
            )
        return Room(
            id=room_id,
            org=org,
            scope="personal",
            title=request.title,
            members=_with_agents([p.sub]),
            created_at=now,
            owner=p.sub,
        )
    others = list(dict.fromkeys(m for m in request.members if m != p.sub))
    if len(others) + 1 > max_members:
        raise Refused(
            "too-many-members",
            422,
            f"a room of {p.org} holds at most {max_members} people and bots on its plan",
        )
    wrong = [m for m in others if _org_of(m) != p.org]
    if wrong:
        raise Refused(
            "invalid-member",
            422,
            f"members are people <org>/<name> or bots bot:<org>:<name> of {p.org}; not {wrong}",
            errors=tuple(wrong[:20]),
        )
    members = _with_agents([p.sub, *others])
    members += (Member(kind="agent", id=ambient_id(p.org)),)
    return Room(
        id=room_id, org=p.org, scope="org", title=request.title, members=members, created_at=now
    )


def _org_of(member: str) -> str | None:
    if member.startswith("bot:"):
        org, _, name = member.removeprefix("bot:").partition(":")
        return org if name else None
    return home_org(member)


def _with_agents(ids: Iterable[str]) -> tuple[Member, ...]:
    """Each person with their own agent; bots as themselves."""
    members: list[Member] = []
    for id_ in ids:
        if id_.startswith("bot:"):
            members.append(Member(kind="bot", id=id_))
        else:
            members += [
                Member(kind="human", id=id_),
                Member(kind="agent", id=personal_agent_id(id_)),
            ]
    return tuple(members)


def answerer(room: Room, message: Message) -> str | None:
    """The one agent that answers `message`: the person's for one to that person, the
    org's for one to the org, none for one to neither, none for what an agent or a bot
    wrote (agents do not answer each other), and none for a question, which the person
    asked answers themself (no agent may answer it, and a reply in words answers nothing)."""
    if message.author_kind != "human" or message.to is None or message.to == message.author:
        return None
    if message.question is not None:
        return None
    if message.to == ORG:
        found = ambient_id(room.org)
    else:
        found = personal_agent_id(message.to)
    return found if is_member(room, found) else None
