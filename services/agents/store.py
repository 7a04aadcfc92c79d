"""The agents service's own buckets and its METER stream.

Keys in `agents`:
    personal.<home org>.<user>   a person's one agent: the pair is the key (hip-0524 §2)
    org.<org>.<agent id>         the org's own agents and bots (a removed one's marker)
    roster.<org>                 their ids, compare-and-set against the plan's capacity
    plan.<org>                   the org's plan; none is `free`
`agents-personas` holds `<org>.<name>`, `agents-preferences` `<home org>.<user>`,
`agents-meter` `<org>.<YYYY-MM>.<agent>`, `agents-making` `<request key>` for 25 h: the agent a
keyed create was about to make, and `agents-replies` `<org>.<room>.<seq>.<agent>` for 25 h:
what an agent drafted in answer to a message, routed again as it was if the message is
delivered again, and `agents-awaiting` `<home org>.<user>.<room>.<seq>` for an hour: a
message for a person's agent read before it was made, answered once it is. Every key that
holds a person's thing names the person.

A key is read from any replica and its absence from the stream's leader (`_get`): an agent
is written once, and an org's persona changed a moment ago may be read as it was on
another node. What is read with every acknowledged write in it: what is under a filter
(the personas, the agents counted against the plan), the org's plan (its limits hold from
the moment it is set), a person's preferences (their own document, read back as they
wrote it), and the entry each compare-and-set starts from.
"""

from collections.abc import Callable

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.agents import (
    AGENT_REMOVED,
    AGENTS_BUCKET,
    METER,
    Agent,
    AgentRemoved,
    Persona,
    Preferences,
    org_agent_key,
)
from libs.contracts.base import key_token
from libs.contracts.rooms import MessageStored
from libs.runtime import logs
from libs.runtime.kv import Conflict, Read, delete, open_bucket, put, swap, write_at
from libs.runtime.leader import exact_reads, newest_seq, seen, value_at
from libs.runtime.service import ensure_stream
from services.agents.domain.meter import AgentMeter
from services.agents.domain.roster import Roster

__all__ = ["AgentStore", "Making", "open_store"]


# As long as the runtime keeps a keyed request's answer in `replies`.
MAKING_KEPT_S = 25 * 3600
# Far past the last redelivery of a message the agent answers.
REPLIES_KEPT_S = 25 * 3600
# How long a message read before its person's agent was made waits for it: their account
# announced with it and read by another replica, or the person put in a room just before.
AWAITING_KEPT_S = 3600


class Making(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The agent a keyed create was about to make, noted before it made it, and the digest of
    the request: the agent stored as noted (its creation time too) is the one it made."""

    agent: Agent
    request: bytes


_agent = codec.decoder(Agent)
_making = codec.decoder(Making)
_persona = codec.decoder(Persona)
_preferences = codec.decoder(Preferences)
_roster = codec.decoder(Roster)
_meter = codec.decoder(AgentMeter)
_candidates = msgspec.json.Decoder(tuple[str, ...]).decode
_stored = codec.decoder(MessageStored)


class AgentStore:
    def __init__(self, js: JetStreamContext, buckets: dict[str, KeyValue], exact: Read) -> None:
        self.js, self._exact = js, exact
        self._agents = buckets[AGENTS_BUCKET]
        self._personas = buckets["agents-personas"]
        self._preferences = buckets["agents-preferences"]
        self._meter = buckets["agents-meter"]
        self._making = buckets["agents-making"]
        self._replies = buckets["agents-replies"]
        self._awaiting = buckets["agents-awaiting"]

    async def personal(self, org: str, user: str) -> Agent | None:
        found = await self._get(self._agents, f"personal.{org}.{key_token(user)}")
        return None if found is None else _agent.decode(found)

    async def create_personal(self, agent: Agent) -> bool:
        """True if made now; False if the person already had their agent."""
        assert agent.user is not None
        return await self._create(f"personal.{agent.org}.{key_token(agent.user)}", agent)

    async def personal_count(self, org: str) -> int:
        return len(await self._exact(self._agents, f"personal.{org}.*"))

    async def org_agent(self, org: str, agent_id: str) -> Agent | None:
        found = await self._get(self._agents, org_agent_key(org, agent_id))
        return None if found is None else _agent.decode(found)

    async def standing_org_agent(self, org: str, agent_id: str) -> Agent | None:
        """The org's agent or bot as the bucket's leader holds it: removed, it is gone from
        the moment its admin was told."""
        found = await value_at(self.js, AGENTS_BUCKET, org_agent_key(org, agent_id))
        return None if found is None else _agent.decode(found)

    async def org_agents(self, org: str) -> list[Agent]:
        """The org's own agents and bots, by id: as many as its plan lets exist."""
        entries = await self._exact(self._agents, f"org.{org}.*")
        return sorted((_agent.decode(e.value) for e in entries), key=lambda a: a.id)

    async def create_org_agent(self, agent: Agent) -> bool:
        return await self._create(org_agent_key(agent.org, agent.id), agent)

    async def _create(self, key: str, agent: Agent) -> bool:
        """Stored where none stands: never made, or removed (a create writes over its
        deletion's marker, where it is as the stream's leader holds it). False where one
        stands, or another create took the place first."""
        value = codec.encode(agent)
        try:
            await write_at(self._agents, key, value, 0)
            return True
        except Conflict:
            if await self._exact(self._agents, key):
                return False
        removed = await newest_seq(self.js, "KV_agents", f"$KV.agents.{key}")
        try:
            await write_at(self._agents, key, value, removed)
        except Conflict:
            return False
        return True

    async def announce_removal(self, removed: AgentRemoved, record: int) -> None:
        """On EVENTS, once for audit record `record` of the removal (its id taken once
        within the stream's duplicate window)."""
        headers = {"Nats-Msg-Id": f"removed-{removed.org}-{record}", **logs.carried()}
        await self.js.publish(AGENT_REMOVED.name, codec.encode(removed), headers=headers)

    async def remove_org_agent(self, agent: Agent) -> None:
        """Deleted, its marker kept: read from a replica behind the leader, it is gone too
        once that replica holds the marker, and a create of the same id writes over it."""
        await delete(self._agents, org_agent_key(agent.org, agent.id))

    async def stored(self, agent: Agent) -> Agent | None:
        """The agent stored under `agent`'s key, personal or the org's."""
        if agent.user is not None:
            return await self.personal(agent.org, agent.user)
        return await self.org_agent(agent.org, agent.id)

    async def making(self, key: str) -> Making | None:
        found = await self._get(self._making, key)
        return None if found is None else _making.decode(found)

    async def note_making(self, key: str, making: Making) -> None:
        await self._making.put(key, codec.encode(making))

    async def replied(self, org: str, room: str, seq: int, agent: str) -> tuple[str, ...] | None:
        """What `agent` drafted in answer to message `seq` of `room`, if it has."""
        found = await self._get(self._replies, _reply_key(org, room, seq, agent))
        return None if found is None else _candidates(found)

    async def note_replied(
        self, org: str, room: str, seq: int, agent: str, candidates: tuple[str, ...]
    ) -> tuple[str, ...]:
        """`candidates` noted as the agent's answer to the message; if another run noted
        its own first, those."""
        key = _reply_key(org, room, seq, agent)
        try:
            await write_at(self._replies, key, msgspec.json.encode(candidates), 0)
        except Conflict:
            found = await self._get(self._replies, key)
            assert found is not None, "a reply noted is never removed before its time"
            return _candidates(found)
        return candidates

    async def note_awaiting(self, org: str, user: str, stored: MessageStored) -> str:
        """`stored`, a message for `user`'s agent read before it was made, noted to be
        answered once it is: its key."""
        key = f"{org}.{key_token(user)}.{key_token(stored.room)}.{stored.seq}"
        await put(self._awaiting, key, codec.encode(stored))
        return key

    async def awaiting(self, org: str, user: str) -> list[tuple[str, MessageStored]]:
        """The messages noted for `user`'s agent, each with its key."""
        entries = await self._exact(self._awaiting, f"{org}.{key_token(user)}.>")
        return [(e.key, _stored.decode(e.value)) for e in entries if e.value]

    async def answered_awaiting(self, key: str) -> None:
        await delete(self._awaiting, key)

    async def roster(self, org: str) -> Roster:
        found = await self._get(self._agents, f"roster.{org}")
        return Roster() if found is None else _roster.decode(found)

    async def change_roster(self, org: str, change: Callable[[Roster], Roster]) -> Roster:
        """The org's roster after `change`, written by compare-and-set."""
        _, after = await swap(
            self._agents,
            f"roster.{org}",
            change,
            decode=_roster.decode,
            default=Roster(),
            read=self._exact,
        )
        return after

    async def change_roster_seeing(
        self, org: str, agent_id: str, change: Callable[[Roster, bool], Roster]
    ) -> Roster:
        """The org's roster after `change(roster, stored)`, written by compare-and-set,
        `stored` saying whether an agent of `agent_id` is stored. It is read after the
        roster, in each attempt: a create that stores one after that read admits it again
        after (`Handlers.create`), so it either finds this write made, or makes this one
        lose and the next attempt see what it stored."""
        stored = False

        async def read(kv: KeyValue, key: str) -> list[KeyValue.Entry]:
            nonlocal stored
            found = await self._exact(kv, key)
            stored = bool(await self._exact(self._agents, org_agent_key(org, agent_id)))
            return found

        _, after = await swap(
            self._agents,
            f"roster.{org}",
            lambda current: change(current, stored),
            decode=_roster.decode,
            default=Roster(),
            read=read,
        )
        return after

    async def plan(self, org: str) -> str:
        found = await self._exact(self._agents, f"plan.{org}")
        return found[0].value.decode() if found and found[0].value else "free"

    async def set_plan(self, org: str, plan: str) -> None:
        await put(self._agents, f"plan.{org}", plan.encode())

    async def personas(self, org: str) -> dict[str, Persona]:
        entries = await self._exact(self._personas, f"{org}.*")
        return {p.name: p for p in (_persona.decode(e.value) for e in entries)}

    async def persona(self, org: str, name: str) -> Persona | None:
        """The org's own persona `name`, read alone (an agent wears one, not the library)."""
        found = await self._get(self._personas, f"{org}.{name}")
        return None if found is None else _persona.decode(found)

    async def put_persona(self, org: str, persona: Persona) -> None:
        await put(self._personas, f"{org}.{persona.name}", codec.encode(persona))

    async def preferences(self, org: str, user: str) -> Preferences:
        found = await self._exact(self._preferences, f"{org}.{key_token(user)}")
        return _preferences.decode(found[0].value) if found and found[0].value else Preferences()

    async def put_preferences(self, org: str, user: str, preferences: Preferences) -> None:
        await put(self._preferences, f"{org}.{key_token(user)}", codec.encode(preferences))

    async def meter(self, org: str, month: str) -> list[AgentMeter]:
        """Every agent's month in the org, by agent."""
        entries = await self._exact(self._meter, f"{org}.{month}.*")
        return sorted((_meter.decode(e.value) for e in entries if e.value), key=lambda m: m.agent)

    async def change_meter(
        self,
        org: str,
        month: str,
        agent: str,
        change: Callable[[AgentMeter | None], AgentMeter],
    ) -> None:
        """The agent's month in the org after `change`, written by compare-and-set."""
        await swap(
            self._meter,
            f"{org}.{month}.{key_token(agent)}",
            change,
            decode=_meter.decode,
            default=None,
            read=self._exact,
        )

    async def _get(self, kv: KeyValue, key: str) -> bytes | None:
        """`key` from any replica, an absence from the stream's leader: a person's agent
        just made is never a 404 from another node, and a create that lost to another
        always finds it."""
        return await seen(kv, key, self._exact) or None


async def open_store(js: JetStreamContext, *, replicas: int = 1) -> AgentStore:
    buckets = {
        name: await open_bucket(js, KeyValueConfig(bucket=name, history=4, replicas=replicas))
        for name in (AGENTS_BUCKET, "agents-personas", "agents-preferences", "agents-meter")
    }
    for name, kept in (
        ("agents-making", MAKING_KEPT_S),
        ("agents-replies", REPLIES_KEPT_S),
        ("agents-awaiting", AWAITING_KEPT_S),
    ):
        buckets[name] = await open_bucket(
            js, KeyValueConfig(bucket=name, history=1, ttl=kept, replicas=replicas)
        )
    await ensure_stream(js, METER, replicas=replicas)
    # The buckets are made alike, so their replicas call for one way of reading them exactly.
    return AgentStore(js, buckets, await exact_reads(buckets[AGENTS_BUCKET]))


def _reply_key(org: str, room: str, seq: int, agent: str) -> str:
    return f"{org}.{room}.{seq}.{key_token(agent)}"
