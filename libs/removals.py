"""What a service that acts on an org's agent's removal (`tether.evt.agents.agent.removed`)
asks of the agents service before it does: whether the removed agent is gone yet, and
whether another was made under its id since, whose own is what came after it."""

from datetime import datetime

from nats.aio.client import Client

from libs.contracts import agents
from libs.contracts.problem import Refused
from libs.runtime.calls import call

__all__ = ["made_again_at"]


async def made_again_at(
    nc: Client, removed: agents.AgentRemoved, *, caller: str
) -> datetime | None:
    """When an agent was made again under the removed one's id, if one stands now; refused
    503 while the removed one still stands (it is announced before it is deleted), so that
    the announcement is read again. An announcement without `made_at` (of the release that
    named it, which set it nowhere) is read as it is heard: none."""
    if removed.made_at is None:
        return None
    standing = agents.StandingRequest(org=removed.org, id=removed.agent)
    try:
        agent: agents.Agent = await call(nc, agents.STANDING, standing, caller=caller)
    except Refused as exc:
        if exc.problem.status == 404:
            return None
        raise
    if agent.created_at == removed.made_at:
        why = f"{removed.agent} is announced removed and not yet deleted"
        raise Refused("agent-not-yet-removed", 503, why)
    return agent.created_at
