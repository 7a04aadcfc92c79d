"""Who exists in an org: the personal agent's key, the ids rooms know agents by, and the
org's own agents and bots, admitted against the plan's capacity."""

from datetime import datetime, timedelta

import msgspec

from libs.contracts.agents import Agent, CreateAgent
from libs.contracts.base import home_org
from libs.contracts.chonk import CHONK_BOT
from libs.contracts.problem import Refused
from services.agents.domain.catalog import UNLIMITED, Plan, allowed

__all__ = [
    "SETTLES_WITHIN",
    "Roster",
    "admit",
    "org_agent",
    "personal_agent",
    "personal_id",
    "released",
    "removed",
    "unsettled",
]

# Longer than any create takes between admitting its agent and storing it: an id admitted
# longer ago whose agent is not stored was left by a create cut short.
SETTLES_WITHIN = timedelta(minutes=1)


class Roster(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """The org's own agents and bots by id (a person's agent is not on it), and when each
    was last admitted (none for one admitted before that was kept)."""

    agents: tuple[str, ...] = ()
    bots: tuple[str, ...] = ()
    admitted: dict[str, datetime] = {}


def personal_id(user: str) -> str:
    return f"agent:{user}"


def personal_agent(user: str, persona: str, now: datetime) -> Agent:
    """The person's one agent, in their home org. A user id with no home org is refused:
    there is no default tenant (hip-0524 §2)."""
    org = home_org(user)
    if org is None:
        raise Refused("no-home-org", 403, f"{user!r} is not <org>/<name>: no home org, no agent")
    return Agent(
        id=personal_id(user), org=org, kind="personal", persona=persona, user=user, created_at=now
    )


def org_agent(org: str, request: CreateAgent, now: datetime) -> Agent:
    if request.ambient and request.kind != "agent":
        raise Refused("ambient-is-an-agent", 422, "the org's ambient agent is an agent, not a bot")
    if request.kind == "bot" and request.persona.startswith(CHONK_BOT):
        raise Refused(
            "bot-name-reserved",
            422,
            f"bot:{org}:{request.persona} is a Chonk's name (its bots are bot:{org}:"
            f"{CHONK_BOT}<id>, in the rooms each shares with a person): choose another persona",
        )
    if request.ambient:
        id_ = f"agent:{org}"
    else:
        id_ = f"{request.kind}:{org}:{request.persona}"
    return Agent(
        id=id_,
        org=org,
        kind=request.kind,
        persona=request.persona,
        ambient=request.ambient,
        created_at=now,
    )


def admit(roster: Roster, agent: Agent, plan: Plan, plan_name: str, now: datetime) -> Roster:
    """The roster with `agent` on it, admitted `now`, or a refusal when the plan's capacity
    is used up. One on it already was admitted by a create cut short before its agent was
    stored, or by the create being run again: it stays, counted once, admitted anew so that
    it is not taken for one left behind while this create stores it."""
    kind = "bot" if agent.kind == "bot" else "agent"
    held = roster.bots if kind == "bot" else roster.agents
    admitted = {**roster.admitted, agent.id: now}
    if agent.id in held:
        return msgspec.structs.replace(roster, admitted=admitted)
    limit = allowed(plan, kind)
    if limit != UNLIMITED and len(held) >= limit:
        raise Refused(
            "over-capacity",
            409,
            f"plan {plan_name} allows {limit} {kind}s and {len(held)} exist; "
            "more capacity is a plan change",
        )
    if kind == "bot":
        return msgspec.structs.replace(roster, bots=(*roster.bots, agent.id), admitted=admitted)
    return msgspec.structs.replace(roster, agents=(*roster.agents, agent.id), admitted=admitted)


def unsettled(roster: Roster, now: datetime) -> tuple[str, ...]:
    """The ids admitted longer ago than a create takes (or before admissions were kept):
    each one is either stored, or left by a create cut short."""
    return tuple(
        id_
        for id_ in (*roster.agents, *roster.bots)
        if (at := roster.admitted.get(id_)) is None or now - at > SETTLES_WITHIN
    )


def released(roster: Roster, left: tuple[str, ...], now: datetime) -> Roster:
    """The roster without the ids in `left` (their agents never stored) that are still
    unsettled: one a create admitted anew meanwhile stays."""
    gone = set(left) & set(unsettled(roster, now))
    return msgspec.structs.replace(
        roster,
        agents=tuple(a for a in roster.agents if a not in gone),
        bots=tuple(b for b in roster.bots if b not in gone),
        admitted={k: v for k, v in roster.admitted.items() if k not in gone},
    )


def removed(roster: Roster, agent_id: str, now: datetime, *, stored_again: bool) -> Roster:
    """The roster without `agent_id`, removed `now`: one a create admitted again since then,
    or stored again (made anew as it was removed), stays."""
    since = roster.admitted.get(agent_id)
    if stored_again or (since is not None and since >= now):
        return roster
    return msgspec.structs.replace(
        roster,
        agents=tuple(a for a in roster.agents if a != agent_id),
        bots=tuple(b for b in roster.bots if b != agent_id),
        admitted={k: v for k, v in roster.admitted.items() if k != agent_id},
    )
