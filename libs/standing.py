"""What a service asks of the agents service about one of an org's own agents or bots:
whether it stands now (poa, before it stores a grant naming it), and, for a reader of its
removal (`tether.evt.agents.agent.removed`), whether the removed one is gone yet and
whether another was made under its id since, whose own is what came after it."""

from datetime import datetime

from nats.aio.client import Client

from libs.contracts import agents
from libs.contracts.problem import Refused
from libs.runtime.calls import call

__all__ = ["made_again_at", "standing"]


async def standing(nc: Client, org: str, agent_id: str, *, caller: str) -> agents.Agent | None:
    """`org`'s agent or bot `agent_id` as the agents' bucket's leader holds it; None if it
    was never made or is removed. A transient failure is raised, never read as gone."""
    try:
        agent: agents.Agent = await call(
            nc, agents.STANDING, agents.StandingRequest(org=org, id=agent_id), caller=caller
        )
    except Refused as exc:
        if exc.problem.status == 404:
            return None
        raise
    return agent


async def made_again_at(
    nc: Client, removed: agents.AgentRemoved, *, caller: str
) -> datetime | None:
    """When an agent was made again under the removed one's id, if one stands now; refused
    503 while the removed one still stands (it is announced before it is deleted), so that
    the announcement is read again. An announcement without `made_at` (of the release that
    named it, which set it nowhere) is read as it is heard: none."""
    if removed.made_at is None:
        return None
    agent = await standing(nc, removed.org, removed.agent, caller=caller)
    if agent is None:
        return None
    if agent.created_at == removed.made_at:
        why = f"{removed.agent} is announced removed and not yet deleted"
        raise Refused("agent-not-yet-removed", 503, why)
    return agent.created_at
