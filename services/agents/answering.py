"""What the agents service does with the events it reads: an account made gets its agent; a
message a room says an agent answers gets that agent's reply, drafted as one metered run.

A person's agent's reply goes to that person's ladder, which decides whether it is held as
a draft, asked as a confirmation, or sent after a window; the org's agent's is a draft.
The agent is shown the history of that one room, read through a subject that names the
room, and nothing from another room or another person.
"""

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from nats.aio.client import Client
from prometheus_client import Counter

from libs.audit.trail import Trail
from libs.contracts import codec, ladder, rooms
from libs.contracts.accounts import AccountCreated
from libs.contracts.agents import Agent, Persona, RunEnded, Speak, Spoken
from libs.contracts.base import home_org
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused, Unavailable
from libs.model import Model, ModelUnavailable
from libs.runtime.calls import call
from services.agents.domain import personas
from services.agents.domain.prompt import candidates, compose
from services.agents.handlers import Handlers
from services.agents.store import AgentStore

__all__ = ["Answering", "person_of"]

_log = logging.getLogger(__name__)
AWAITING = Counter(
    "tether_agents_awaiting",
    "Messages read before their person's agent was made: left awaiting it, and answered "
    "from their notes once it was.",
    ["outcome"],
)
_HISTORY = 20
UNDRAFTED_NOTICE = (
    "I could not draft a reply to this: every try failed, so nothing was sent for it. "
    "If it needs an answer, answer it yourself."
)


class Answering:
    def __init__(
        self,
        nc: Client,
        store: AgentStore,
        handlers: Handlers,
        trail: Trail,
        model: Model,
        presets: Mapping[str, Persona],
        clock: Callable[[], datetime],
    ) -> None:
        self._nc, self._js, self._store = nc, nc.jetstream(), store
        self._handlers, self._trail, self._model = handlers, trail, model
        self._presets, self._clock = presets, clock

    async def handle(self, event: AccountCreated | rooms.MessageStored) -> None:
        match event:
            case AccountCreated(user=user):
                agent, made = await self._handlers.provision(user)
                _log.info("account provisioned", extra={"agent": agent.id, "made": made})
                await self._answer_awaiting(agent)
            case rooms.MessageStored(answerer=str()):
                await self.answer(event)

    async def answer(self, stored: rooms.MessageStored) -> None:
        agent = await self._agent(stored.answerer or "", stored.org)
        if agent is None:
            agent = await self._awaited(stored)
        if agent is None:
            return  # a person without an agent yet, or an org without an ambient agent
        replies = await self._replies(agent, stored)
        if not replies:
            return
        if agent.user is None:  # the org's agent answers under org policy: a draft
            draft = rooms.PostDraft(
                org=stored.org,
                room=stored.room,
                reply_to=stored.seq,
                agent=agent.id,
                text=replies[0],
            )
            await call(self._nc, rooms.POST_DRAFT, draft, caller="agents")
            return
        reply = ladder.Reply(  # the person's ladder decides what becomes of it
            org=stored.org,
            person=agent.user,
            room=stored.room,
            transport=stored.transport,
            first_contact=stored.first_contact,
            reply_to=stored.seq,
            candidates=replies,
        )
        await call(self._nc, ladder.ROUTE, reply, caller="agents")

    async def _awaited(self, stored: rooms.MessageStored) -> Agent | None:
        """A message for a person's agent not made yet, noted to be answered once it is
        (`_answer_awaiting`), then the agent looked for again: made meanwhile (the account
        read at that moment by another replica, which found no note yet), it answers here.
        One replica reads a person's events in order (`person_of`), but two, one reading the
        account and the other the message, left the message answered by no one. An org's
        agent is never awaited: its admin makes it, nothing announces it."""
        person = person_of(stored)
        if person is None or (org := home_org(person)) is None:
            return None
        key = await self._store.note_awaiting(org, person, stored)
        agent = await self._store.personal(org, person)
        if agent is None:
            where = {"agent": stored.answerer, "room": stored.room, "seq": stored.seq}
            _log.info("a message awaits its person's agent", extra=where)
            AWAITING.labels("awaiting").inc()
        else:
            await self._store.answered_awaiting(key)
        return agent

    async def _answer_awaiting(self, agent: Agent) -> None:
        """Each message noted for the person's agent before it was made, answered, then its
        note let go: a note answered twice (its message read again meanwhile) is drafted
        once and routed once, by the reply's key."""
        assert agent.user is not None
        for key, stored in await self._store.awaiting(agent.org, agent.user):
            await self.answer(stored)
            await self._store.answered_awaiting(key)
            AWAITING.labels("answered").inc()

    async def undrafted(self, event: AccountCreated | rooms.MessageStored, error: str) -> None:
        """Every try to draft the reply to a message failed, and its reader parked it (a
        model down for longer than the retries, say). A person's agent tells them, in that
        room and to them alone, recorded first: otherwise they would wait for a reply that
        does not come. An org's agent has no person to tell; the dead letter's record is
        what says so."""
        match event:
            case rooms.MessageStored(answerer=str(answerer)):
                agent = await self._agent(answerer, event.org)
            case _:
                return
        if agent is None or agent.user is None:
            return
        async with self._trail.change(
            event.org,
            actor=None,
            action="agents.reply.undrafted",
            target=f"{event.room}:{event.seq}",
            data={"agent": agent.id, "error": error[:300]},
        ):
            told = rooms.Undrafted(
                org=event.org,
                room=event.room,
                person=agent.user,
                reply_to=event.seq,
                text=UNDRAFTED_NOTICE,
            )
            await call(self._nc, rooms.UNDRAFTED, told, caller="agents")

    async def _replies(self, agent: Agent, stored: rooms.MessageStored) -> tuple[str, ...]:
        """The agent's candidates for `stored`, drafted in one run however often the message
        is delivered: a delivery again (the route failed, or a replica died before it
        acknowledged) routes what was drafted. Another run would be metered again, and its
        other words refused under the reply's key, once the person holds its notice or
        question."""
        where = (stored.org, stored.room, stored.seq, agent.id)
        noted = await self._store.replied(*where)
        if noted is not None:
            return noted
        drafted = await self._run(agent, stored.org, stored.room, stored.seq, stored.transport)
        return await self._store.note_replied(*where, drafted)

    async def speak(self, req: Speak, _: Principal) -> Spoken:
        """On a live call the ladder let the agent take (the rooms service asked it): the
        reply to say now, its best candidate. One run, metered as any other."""
        home = home_org(req.person)
        agent = None if home is None else await self._store.personal(home, req.person)
        if agent is None:
            raise Refused("agent-not-found", 404, f"{req.person} has no agent to speak")
        replies = await self._run(agent, req.org, req.room, req.upto, "voice")
        if not replies:
            raise Refused("persona-gone", 409, f"{agent.id}'s persona is gone; it cannot speak")
        return Spoken(text=replies[0])

    async def _run(
        self, agent: Agent, org: str, room: str, upto: int, line: str | None
    ) -> tuple[str, ...]:
        """One metered run: the model's candidates for the room's history up to `upto`, for
        a room whose messages leave by `line` (a transport), if any."""
        run_id, started_at, started = uuid.uuid4().hex, self._clock(), time.perf_counter()
        try:
            return await self._draft(agent, org, room, upto, line)
        finally:  # the time ran whether or not the reply got through: it is billed
            run = RunEnded(
                run=run_id,
                org=org,
                agent=agent.id,
                kind=agent.kind,
                user=agent.user,
                started_at=started_at,
                ended_at=started_at + _elapsed(started),
            )
            await self._js.publish(f"agents.run.ended.{org}", codec.encode(run))

    async def _draft(
        self, agent: Agent, org: str, room: str, upto: int, line: str | None
    ) -> tuple[str, ...]:
        page: rooms.MessagePage = await call(
            self._nc,
            rooms.HISTORY,
            rooms.History(org=org, room=room, upto=upto, limit=_HISTORY),
            caller="agents",
        )
        persona = personas.resolve(
            agent.persona, self._presets, await self._store.persona(agent.org, agent.persona)
        )
        if persona is None:
            _log.warning("agent's persona is gone; no reply", extra={"agent": agent.id})
            return ()
        preferences = None
        if agent.user is not None:  # read now, never kept
            preferences = await self._store.preferences(agent.org, agent.user)
        prompt = compose(
            persona, preferences, page.messages, speaker=agent.user or rooms.ORG, line=line
        )
        try:
            said = await self._model.reply(prompt)
        except ModelUnavailable as exc:  # the provider's outage passes: asked again, it may answer
            raise Unavailable(Refused("model-unavailable", 503, str(exc)).problem) from exc
        return candidates(said, line)

    async def _agent(self, member: str, org: str) -> Agent | None:
        """The agent rooms know as `member`: a person's own (kept in their home org, answering
        in any room of theirs), or one of the room's org."""
        kind, _, user = member.partition(":")
        if kind == "agent" and (home := home_org(user)) is not None:
            return await self._store.personal(home, user)
        return await self._store.org_agent(org, member)


def person_of(event: AccountCreated | rooms.MessageStored) -> str | None:
    """The person an event is about, whose events a replica handles in the order they
    came: their account made, and each message their own agent answers. Read at once, a
    message fetched with the announcement of its person's account (a reader behind, or
    started again) found no agent yet, and was answered by none."""
    match event:
        case AccountCreated(user=user):
            return user
        case rooms.MessageStored(answerer=str(answerer)):
            kind, _, user = answerer.partition(":")
            return user if kind == "agent" and home_org(user) is not None else None
    return None


def _elapsed(started: float) -> timedelta:
    return timedelta(seconds=time.perf_counter() - started)
