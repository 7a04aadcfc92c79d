"""A token acting as an org's own agent or bot is taken only while that agent stands, and
only if it was issued once it was made (hip-0524 §13).

A token is verified by its signature, and an org agent's outlives the agent: removed, or
removed and made again under its id, the agent's old tokens acted as it until they
expired, and a token could act as a bot the org never made. The agent is read as the
agents service's bucket's leader holds it, at each request that acts as one: a removal
holds from the moment the admin is told of it, at every gateway. A person's own agent is
theirs for good, and a delegate reaches only the grants that name it; neither is read.
"""

from aiohttp import web
from nats.aio.client import Client

from libs.contracts import codec
from libs.contracts.agents import AGENTS_BUCKET, ORG_AGENT, Agent, org_agent_key
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.leader import value_at
from services.gateway.streams import refused_event
from services.gateway.tokens import issued_at

__all__ = ["standing", "told_removed"]

_agent = codec.decoder(Agent).decode


async def standing(nc: Client, p: Principal, authorization: str | None, key: str) -> None:
    """Refuse `p`'s token if it acts as an org's agent or bot that does not stand, or
    stood only after the token was issued (`iat` counts whole seconds)."""
    if p.act is None or not ORG_AGENT.match(p.act):
        return
    try:
        found = await value_at(nc.jetstream(), AGENTS_BUCKET, org_agent_key(p.org, p.act))
    except Exception as exc:  # the bus away, or the bucket's leader in an election
        why = f"whether {p.act} stands could not be read; ask again"
        raise Refused("org-agent-unread", 503, why) from exc
    if found is None:
        why = f"{p.org} has no agent or bot {p.act} to act as: never made, or removed"
        raise Refused("act-not-standing", 401, why)
    if issued_at(authorization, key) < int(_agent(found).created_at.timestamp()):
        why = f"the token was issued before {p.act} was made: it acted as one removed since"
        raise Refused("token-revoked", 401, why)


async def told_removed(
    nc: Client, p: Principal, authorization: str | None, key: str, response: web.StreamResponse
) -> bool:
    """At the turn of a stream opened before: whether `standing` refuses its caller now,
    definitely, told to the client as the `refused` event the stream ends with. A read that
    fails leaves the stream open, to be read again at its next turn."""
    try:
        await standing(nc, p, authorization, key)
    except Refused as exc:
        if exc.problem.status < 500:
            await response.write(refused_event(exc))
            return True
    return False
