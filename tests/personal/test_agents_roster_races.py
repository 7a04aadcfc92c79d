"""A create and a removal of one id, on two replicas at once, leave the roster counting
every agent that stands: an org is never let past its plan's capacity by one that stands
off the roster. Each test runs the service's own handlers on the agents' credential over
the test's bus, two replicas by two `Handlers`, and holds each at the step where the
other must come between (the only way to have them meet there every time)."""

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import pytest
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import codec
from libs.contracts.agents import AGENT_REMOVED, Agent, AgentRemoved, CreateAgent, RemoveAgent
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.streams import EVENTS
from libs.runtime.service import ensure_stream
from services.agents.handlers import Handlers
from services.agents.main import catalog_and_presets
from services.agents.store import AgentStore, open_store
from tests.personal.conftest import behind
from tests.support import published_from_now

CTO = CreateAgent(persona="cto")


class Held(AgentStore):
    """The agents' store, one step of it held until the test lets it on."""

    def __init__(self, store: AgentStore, step: str) -> None:
        self.__dict__.update(store.__dict__)
        self.step, self.reached, self.go = step, asyncio.Event(), asyncio.Event()

    async def _hold(self) -> None:
        self.reached.set()
        await self.go.wait()

    async def create_org_agent(self, agent: Agent) -> bool:
        if self.step == "store":
            await self._hold()
        return await super().create_org_agent(agent)

    async def remove_org_agent(self, agent: Agent) -> None:
        await super().remove_org_agent(agent)
        if self.step == "deleted":
            await self._hold()


@pytest.fixture
async def agents_bus(connect, audit_service) -> AsyncIterator[Client]:
    async with connect("agents") as nc:
        yield nc


@pytest.fixture
async def store(agents_bus) -> AgentStore:
    await ensure_stream(agents_bus.jetstream(), EVENTS, replicas=1)  # where removals go
    return await open_store(agents_bus.jetstream())


@pytest.fixture
def replica(agents_bus) -> Callable[..., Handlers]:
    """replica(store, clock): the service's handlers over `store`, as one replica has them."""
    catalog, presets = catalog_and_presets()

    def replica(store: AgentStore, clock=lambda: datetime.now(UTC)) -> Handlers:
        return Handlers(store, Trail(agents_bus, service="agents"), catalog, presets, clock)

    return replica


def admin(org: str) -> Principal:
    return Principal(org=org, sub=f"{org}/root", roles=("admin",))


async def test_a_create_storing_after_a_removal_deleted_the_one_it_made_again_keeps_its_place(
    store, replica, org
):
    """The create admitted the id while the one removed stood, and stored its own after the
    removal's delete; the removal then took the id off the roster, as the place of the one
    it removed. The agent stood uncounted. Once stored, a create is admitted again: the id
    it finds gone is put back, within the plan."""
    await store.set_plan(org, "pro")
    creating = Held(store, "store")
    removing, making = replica(store), replica(creating)
    cto = await removing.create(CTO, admin(org))

    again = asyncio.create_task(making.create(CTO, admin(org)))
    await creating.reached.wait()
    assert await removing.remove(RemoveAgent(id=cto.id), admin(org)) == cto
    creating.go.set()
    made = await again

    assert await store.org_agent(org, cto.id) == made != cto
    assert (await store.roster(org)).agents == (cto.id,)


async def test_a_removal_reads_whether_its_id_stands_again_with_the_roster(store, replica, org):
    """The create stored its agent after the removal's delete and was admitted again before
    the removal wrote the roster, on a replica whose clock runs a second behind: the
    admission's time read as before the removal, and the removal took the id off. The
    removal reads whether one of its id is stored after the roster, in each attempt."""
    await store.set_plan(org, "pro")
    deleted = Held(store, "deleted")
    removing, making = replica(deleted), replica(store, behind(1))
    cto = await making.create(CTO, admin(org))

    removal = asyncio.create_task(removing.remove(RemoveAgent(id=cto.id), admin(org)))
    await deleted.reached.wait()
    made = await making.create(CTO, admin(org))
    deleted.go.set()
    assert await removal == cto

    assert await store.org_agent(org, cto.id) == made != cto
    assert (await store.roster(org)).agents == (cto.id,)


async def test_a_create_whose_place_was_taken_as_it_stored_lets_its_agent_go(
    store, replica, org, operator
):
    """As above, and another create took the place the removal freed before this one was
    admitted again: the plan's capacity holds, and this create is refused, its agent gone as a
    removed one goes, announced first."""
    await store.set_plan(org, "pro")  # three agents
    removals = await published_from_now(operator.jetstream(), AGENT_REMOVED.name)
    creating = Held(store, "store")
    removing, making = replica(store), replica(creating)
    cto = await removing.create(CTO, admin(org))
    for persona in ("dev", "des"):
        await removing.create(CreateAgent(persona=persona), admin(org))

    again = asyncio.create_task(making.create(CTO, admin(org)))
    await creating.reached.wait()
    await removing.remove(RemoveAgent(id=cto.id), admin(org))
    researcher = await removing.create(CreateAgent(persona="researcher"), admin(org))
    creating.go.set()
    with pytest.raises(Refused) as refused:
        await again

    assert refused.value.problem.rule == "over-capacity"
    assert await store.org_agent(org, cto.id) is None
    # The one let go is announced removed too: a grant may have named it as it stood.
    read = codec.decoder(AgentRemoved).decode
    first, second = [read(m.data) for m in await _next(removals, 2)]
    assert (first.org, second.org) == (org, org)
    assert first.made_at == cto.created_at != second.made_at
    assert sorted(a.id for a in await store.org_agents(org)) == sorted(
        (await store.roster(org)).agents
    )
    assert researcher.id in (await store.roster(org)).agents


async def _next(subscription, count: int) -> list:
    return [await subscription.next_msg(timeout=10) for _ in range(count)]
