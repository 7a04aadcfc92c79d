"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers that the key is not there. A person's agent just made is found
from another node at once: never a 404 for an agent that exists, and a create that lost to
another's finds the one made (it asserted so, and a replica behind made that a 500). An
org's persona just made is in its list, and its agents are counted, from another node."""

from datetime import UTC, datetime

import pytest

from libs.contracts.agents import Persona, Preferences
from services.agents.domain.roster import personal_agent
from services.agents.store import AgentStore, open_store
from tests.support import asked_again

AGENTS = 3000  # a replica behind missed none of the first 2,000 in two runs, 4 and 19 after


@pytest.fixture
async def stores(two_nodes) -> tuple[AgentStore, AgentStore]:
    """The agents' store on the node that writes, and on another."""
    return tuple([await open_store(nc.jetstream(), replicas=3) for nc in two_nodes])


async def test_an_agent_read_as_soon_as_it_is_made_is_found(stores):
    store, elsewhere = stores
    missed = []
    for i in range(AGENTS):
        agent = personal_agent(f"acme/p{i}", "self", datetime(2026, 12, 3, tzinfo=UTC))
        assert await asked_again(store.create_personal, agent)
        if await asked_again(elsewhere.personal, "acme", f"acme/p{i}") != agent:
            missed.append(i)
    assert missed == []
    assert await elsewhere.personal("acme", "acme/never-made") is None


async def test_a_persona_just_made_is_listed_and_an_agent_counted_from_another_node(stores):
    store, elsewhere = stores
    missed = []
    for i in range(AGENTS):
        org = f"org-{i}"
        persona = Persona(name="cto", description="the CTO", instructions="Decide.")
        await asked_again(store.put_persona, org, persona)
        if await asked_again(elsewhere.personas, org) != {"cto": persona}:
            missed.append(("persona", i))
        agent = personal_agent(f"{org}/ada", "self", datetime(2026, 12, 3, tzinfo=UTC))
        assert await asked_again(store.create_personal, agent)
        if await asked_again(elsewhere.personal_count, org) != 1:
            missed.append(("counted", i))
    assert missed == []


async def test_a_plan_and_preferences_just_changed_are_read_as_changed_from_another_node(stores):
    """The plan decides the org's limits, and a person reads back their own preferences:
    neither may be read from a replica that still holds the value before."""
    store, elsewhere = stores
    missed = []
    for i in range(AGENTS):
        org, user = f"org-{i}", f"org-{i}/ada"
        for plan in ("team", "free"):
            await asked_again(store.set_plan, org, plan)
        if await asked_again(elsewhere.plan, org) != "free":
            missed.append(("plan", i))
        for tone in ("warm", "brief"):
            await asked_again(store.put_preferences, org, user, Preferences(tone=tone))
        if await asked_again(elsewhere.preferences, org, user) != Preferences(tone="brief"):
            missed.append(("preferences", i))
    assert missed == []
