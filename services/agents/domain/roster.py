"""Who exists in an org: the personal agent's key, the ids rooms know agents by, and the
org's own agents and bots, admitted against the plan's capacity."""

from datetime import datetime

import msgspec

from libs.contracts.agents import Agent, CreateAgent
from libs.contracts.base import home_org
from libs.contracts.problem import Refused
from services.agents.domain.catalog import UNLIMITED, Plan, allowed

__all__ = ["Roster", "admit", "org_agent", "personal_agent", "personal_id"]


class Roster(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The org's own agents and bots by id (a person's agent is not on it)."""

    agents: tuple[str, ...] = ()
    bots: tuple[str, ...] = ()


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


def admit(roster: Roster, agent: Agent, plan: Plan, plan_name: str) -> Roster:
    """The roster with `agent` on it, or a refusal when the plan's capacity is used up. One
    on it already was admitted by a create cut short before its agent was stored, or by
    the create being run again: it stays, counted once."""
    kind = "bot" if agent.kind == "bot" else "agent"
    held = roster.bots if kind == "bot" else roster.agents
    if agent.id in held:
        return roster
    limit = allowed(plan, kind)
    if limit != UNLIMITED and len(held) >= limit:
        raise Refused(
            "over-capacity",
            409,
            f"plan {plan_name} allows {limit} {kind}s and {len(held)} exist; "
            "more capacity is a plan change",
        )
    if kind == "bot":
        return msgspec.structs.replace(roster, bots=(*roster.bots, agent.id))
    return msgspec.structs.replace(roster, agents=(*roster.agents, agent.id))
