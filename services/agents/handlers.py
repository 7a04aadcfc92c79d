"""One handler per `tether.agents.*` subject, and the making of a person's agent."""

from collections.abc import Callable, Mapping
from datetime import datetime

from libs.audit.trail import Trail
from libs.contracts import agents
from libs.contracts.base import home_org
from libs.contracts.principal import Principal
from libs.contracts.problem import KeyReused, Refused
from libs.contracts.registry import Subject
from libs.runtime import pages
from libs.runtime.kv import Conflict
from libs.runtime.locks import KeyedLocks
from libs.runtime.service import Handler, request_digest, request_key
from services.agents.domain import meter, personas, roster
from services.agents.domain.catalog import Catalog, Plan
from services.agents.store import AgentStore, Making

__all__ = ["Handlers"]

Clock = Callable[[], datetime]


class Handlers:
    def __init__(
        self,
        store: AgentStore,
        trail: Trail,
        catalog: Catalog,
        presets: Mapping[str, agents.Persona],
        clock: Clock,
    ) -> None:
        self._store, self._trail, self._catalog = store, trail, catalog
        self._presets, self._clock = presets, clock
        self._provisioning = KeyedLocks()

    async def provision(
        self, user: str, persona: str = personas.SELF, *, key: str | None = None
    ) -> tuple[agents.Agent, bool]:
        """The person's agent, made if they have none; (agent, made now). Idempotent under
        any number of replicas and redeliveries: the pair key is created at most once. A
        keyed request notes under its `key` what it is about to make."""
        agent = roster.personal_agent(user, persona, self._clock())
        async with self._provisioning.hold(user):  # copies of one event, in turn
            existing = await self._store.personal(agent.org, user)
            if existing is not None:
                return existing, False
            if await self._persona(agent.org, persona) is None:
                raise Refused("persona-not-found", 404, f"no persona {persona!r} in {agent.org}")
            actor = agents_principal(agent.org)
            try:
                async with self._trail.change(
                    agent.org, actor=actor, action="agents.personal.create", target=agent.id
                ):
                    await self._note_making(key, agent)
                    if not await self._store.create_personal(agent):
                        raise Conflict(agent.id)  # another replica made it: recorded as failed
            except Conflict:
                existing = await self._store.personal(agent.org, user)
                assert existing is not None
                return existing, False
        return agent, True

    async def mine(self, _: agents.GetMine, p: Principal) -> agents.MyAgent:
        org, user = _person(p)
        agent = await self._store.personal(org, user)
        if agent is None:
            raise Refused("agent-not-found", 404, f"{user} has no agent yet")
        return await self._with_persona(agent)

    async def create_mine(self, req: agents.CreateMine, p: Principal) -> agents.MyAgent:
        _refuse_agents(p, "create a person's agent")
        _, user = _person(p)
        if (made_before := await self._made(request_key())) is not None:
            return await self._with_persona(made_before)
        agent, made = await self.provision(user, req.persona, key=request_key())
        if not made:
            raise Refused("agent-exists", 409, f"{user} has their agent; a person has exactly one")
        return await self._with_persona(agent)

    async def personas(self, req: agents.ListPersonas, p: Principal) -> agents.PersonaList:
        own = await self._store.personas(p.org)
        library = personas.library(self._presets, own)
        if req.after is not None:
            library = [entry for entry in library if entry.persona.name > req.after]
        page, more = pages.first(library, req.limit)
        return agents.PersonaList(personas=page, next=page[-1].persona.name if more else None)

    async def add_persona(self, req: agents.AddPersona, p: Principal) -> agents.ListedPersona:
        _admin(p, "add a persona")
        persona = personas.owned_by_org(req.persona)
        async with self._trail.change(
            p.org, actor=p, action="agents.persona.put", target=persona.name
        ):
            await self._store.put_persona(p.org, persona)
        return agents.ListedPersona(origin="org", persona=req.persona)

    async def create(self, req: agents.CreateAgent, p: Principal) -> agents.Agent:
        _admin(p, "create an org agent")
        if (made := await self._made(request_key())) is not None:
            return made
        if await self._persona(p.org, req.persona) is None:
            raise Refused("persona-not-found", 404, f"no persona {req.persona!r} in {p.org}")
        agent = roster.org_agent(p.org, req, self._clock())
        async with self._trail.change(
            p.org, actor=p, action="agents.org.create", target=agent.id
        ) as record:
            await self._admit(agent)
            await self._note_making(request_key(), agent)
            if not await self._store.create_org_agent(agent):
                raise Refused("agent-exists", 409, f"{agent.id} exists")
            await self._admitted_again(agent, p, record.n)
        return agent

    async def remove(self, req: agents.RemoveAgent, p: Principal) -> agents.Agent:
        """Removed, recorded first: announced, so the grants naming it are revoked (before
        it is deleted: a removal cut short after it is asked again, where one announced
        after would find nothing to remove, and the grants would stand), deleted, so it
        answers, runs and acts no more, then off the roster, so its place is free. A create
        of the same id admitted or stored meanwhile keeps its place; one cut short between
        the two leaves the id to be let go as any create cut short does. Removed again, it
        is not found."""
        _admin(p, "remove an org agent")
        agent = await self._store.org_agent(p.org, req.id)
        if agent is None:
            raise Refused("agent-not-found", 404, f"{p.org} has no agent or bot {req.id}")
        now = self._clock()
        async with self._trail.change(
            p.org, actor=p, action="agents.org.remove", target=agent.id
        ) as record:
            await self._let_go(agent, p, record.n)
            await self._store.change_roster_seeing(
                p.org,
                agent.id,
                lambda current, stored: roster.removed(current, agent.id, now, stored_again=stored),
            )
        return agent

    async def org_agents(self, req: agents.ListAgents, p: Principal) -> agents.AgentList:
        _admin(p, "list the org's agents")
        found = await self._store.org_agents(p.org)
        if req.after is not None:
            found = [agent for agent in found if agent.id > req.after]
        page, more = pages.first(found, req.limit)
        return agents.AgentList(agents=page, next=page[-1].id if more else None)

    async def _note_making(self, key: str | None, agent: agents.Agent) -> None:
        if key is not None:
            await self._store.note_making(key, Making(agent=agent, request=request_digest()))

    async def _made(self, key: str | None) -> agents.Agent | None:
        """The agent this keyed request made before its answer was lost with its replica:
        noted under the key, and stored as noted. One made by another request differs in
        its creation time at least, and the request then runs (and is refused) again."""
        making = None if key is None else await self._store.making(key)
        if making is None:
            return None
        if making.request != request_digest():
            raise KeyReused()
        return making.agent if await self._store.stored(making.agent) == making.agent else None

    async def _admit(self, agent: agents.Agent) -> None:
        """Onto the org's roster by compare-and-set, so concurrent creates never pass the
        plan's capacity together. When it is full, the ids that creates cut short left on
        it (their agents never stored) are let go first, recorded: otherwise each would
        hold its place for good."""
        plan_name, plan = await self._plan(agent.org)

        async def admitted() -> None:
            now = self._clock()
            await self._store.change_roster(
                agent.org, lambda current: roster.admit(current, agent, plan, plan_name, now)
            )

        try:
            return await admitted()
        except Refused as exc:
            if exc.problem.rule != "over-capacity":
                raise
            now = self._clock()
            left = await self._left_behind(agent.org, now)
            if not left:
                raise
        async with self._trail.change(
            agent.org, actor=None, action="agents.roster.release", data={"ids": list(left)}
        ):
            await self._store.change_roster(
                agent.org, lambda current: roster.released(current, left, now)
            )
        await admitted()

    async def _let_go(self, agent: agents.Agent, by: Principal, record: int) -> None:
        """Announced removed under audit record `record`, then deleted."""
        removed = agents.AgentRemoved(
            org=agent.org, agent=agent.id, by=by, made_at=agent.created_at
        )
        await self._store.announce_removal(removed, record)
        await self._store.remove_org_agent(agent)

    async def _admitted_again(self, agent: agents.Agent, by: Principal, record: int) -> None:
        """Admitted again once stored: a removal of the same id whose delete came between
        this create's admission and its store took the id off the roster after, as the
        place of the one it removed, and this agent would stand uncounted. Put back within
        the plan's capacity; past it (the place was taken meanwhile), let go again as a
        removal lets go (a grant may have named it as it stood), and the create refused."""
        try:
            await self._admit(agent)
        except Refused:
            await self._let_go(agent, by, record)
            raise

    async def _left_behind(self, org: str, now: datetime) -> tuple[str, ...]:
        """The ids on the org's roster, admitted longer ago than a create takes, whose
        agents were never stored."""
        unsettled = roster.unsettled(await self._store.roster(org), now)
        return tuple([i for i in unsettled if await self._store.org_agent(org, i) is None])

    async def preferences(self, _: agents.GetPreferences, p: Principal) -> agents.Preferences:
        _refuse_agents(p, "read preferences; the agent reads them only when it drafts")
        org, user = _person(p)
        return await self._store.preferences(org, user)

    async def set_preferences(self, req: agents.Preferences, p: Principal) -> agents.Preferences:
        _refuse_agents(p, "write a person's preferences")
        org, user = _person(p)
        async with self._trail.change(org, actor=p, action="agents.preferences.set", target=user):
            await self._store.put_preferences(org, user, req)
        return req

    async def billing(self, req: agents.BillingRequest, p: Principal) -> agents.Billing:
        _admin(p, "read the org's bill")
        month_name = req.month or self._clock().strftime("%Y-%m")
        plan_name, plan = await self._plan(p.org)
        held = await self._store.roster(p.org)
        month = await self._store.meter(p.org, month_name)
        rate = self._catalog.runtime.agent_hour_usd
        seconds = sum(m.seconds for m in month)
        runtimes = [
            agents.AgentRuntime(
                agent=m.agent,
                kind=m.kind,
                user=m.user,
                runs=m.runs,
                seconds=m.seconds,
                amount_usd=str(meter.amount(m.seconds, rate)),
            )
            for m in month
            if req.after is None or m.agent > req.after
        ]
        page, more = pages.first(runtimes, req.limit)
        return agents.Billing(
            org=p.org,
            plan=plan_name,
            month=month_name,
            capacity=agents.Capacity(
                personal_agents=await self._store.personal_count(p.org),
                agents=agents.Allowance(allowed=plan.limits.agents, in_use=len(held.agents)),
                bots=agents.Allowance(allowed=plan.limits.bots, in_use=len(held.bots)),
            ),
            rate_usd_per_hour=str(rate),
            seconds=seconds,
            hours=f"{seconds / 3600:.4f}",
            amount_usd=str(meter.amount(seconds, rate)),
            agents=page,
            next=page[-1].agent if more else None,
        )

    async def plan(self, req: agents.SetPlan, p: Principal) -> agents.PlanSet:
        if req.plan not in self._catalog.plans:
            known = ", ".join(sorted(self._catalog.plans))
            raise Refused("plan-not-found", 422, f"no plan {req.plan!r} in the catalog: {known}")
        async with self._trail.change(req.org, actor=p, action="agents.plan.set", target=req.plan):
            await self._store.set_plan(req.org, req.plan)
        return agents.PlanSet(org=req.org, plan=req.plan)

    def table(self) -> Mapping[Subject, Handler]:
        return {
            agents.GET_MINE: self.mine,
            agents.CREATE_MINE: self.create_mine,
            agents.PERSONAS: self.personas,
            agents.ADD_PERSONA: self.add_persona,
            agents.CREATE: self.create,
            agents.ORG_AGENTS: self.org_agents,
            agents.REMOVE: self.remove,
            agents.PREFERENCES: self.preferences,
            agents.SET_PREFERENCES: self.set_preferences,
            agents.BILLING: self.billing,
            agents.PLAN: self.plan,
            agents.LIMITS: self.limits,
            agents.STANDING: self.standing,
        }

    async def limits(self, req: agents.PlanLimitsRequest, _: Principal) -> agents.PlanLimits:
        name, plan = await self._plan(req.org)
        return agents.PlanLimits(plan=name, room_members=plan.limits.room_members)

    async def standing(self, req: agents.StandingRequest, _: Principal) -> agents.Agent:
        agent = await self._store.standing_org_agent(req.org, req.id)
        if agent is None:
            raise Refused("agent-not-found", 404, f"{req.org} has no agent or bot {req.id}")
        return agent

    async def _plan(self, org: str) -> tuple[str, Plan]:
        name = await self._store.plan(org)
        plan = self._catalog.plans.get(name)
        if plan is None:  # the catalog changed under an org's plan
            raise Refused(
                "plan-not-in-catalog",
                409,
                f"{org} is on plan {name!r}, which the catalog no longer has",
            )
        return name, plan

    async def _persona(self, org: str, name: str) -> agents.Persona | None:
        return personas.resolve(name, self._presets, await self._store.persona(org, name))

    async def _with_persona(self, agent: agents.Agent) -> agents.MyAgent:
        persona = await self._persona(agent.org, agent.persona)
        if persona is None:  # the org removed the persona it was cut from
            raise Refused("persona-not-found", 404, f"{agent.persona!r} is gone from the library")
        return agents.MyAgent(agent=agent, persona=persona)


def agents_principal(org: str) -> Principal:
    return Principal(org=org, sub="service:agents")


def _person(p: Principal) -> tuple[str, str]:
    """(home org, user): the pair every person's thing is keyed by."""
    org = home_org(p.sub)
    if org is None:
        raise Refused("no-home-org", 403, f"{p.sub!r} is not a person <org>/<name>")
    return org, p.sub


def _refuse_agents(p: Principal, what: str) -> None:
    if p.is_agent:
        raise Refused("agent-may-not", 403, f"an agent ({p.act}) may not {what}")


def _admin(p: Principal, what: str) -> None:
    _refuse_agents(p, what)
    if "admin" not in p.roles:
        raise Refused("admin-only", 403, f"only an admin of {p.org} may {what}")
