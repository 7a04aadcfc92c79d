"""A person's own agent or an org agent made with an Idempotency-Key whose answer was lost in a
failover, sent again with the key, is answered with the agent it made, not refused as
existing. The same agent made by another request is still refused, and so is the key sent
with another request."""

from tests.personal.conftest import problem
from tests.support import (
    answered_again_after_a_failover,
    forget_idempotency_key,
    forget_kept_answers,
    set_plan,
)


async def test_a_keyed_org_agent_made_again_is_answered_as_made(api, people, operator, stack):
    await set_plan(operator, people.org, "pro")
    keyed = people.root | {"Idempotency-Key": "org-agent-1"}

    made = await answered_again_after_a_failover(
        api, "/v1/agents", {"persona": "cto"}, keyed, service="agents",
        redis_url=stack.redis_url, operator=operator,
    )  # fmt: skip

    assert made["id"] == f"agent:{people.org}:cto"
    other = people.root | {"Idempotency-Key": "org-agent-2"}
    again = await api.post("/v1/agents", json={"persona": "cto"}, headers=other)
    assert await problem(again) == (409, "agent-exists")
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"]["agents"]["in_use"] == 1


async def test_a_keyed_own_agent_made_again_is_answered_as_made(api, people, operator, stack):
    keyed = people.bob | {"Idempotency-Key": "my-agent-1"}

    made = await answered_again_after_a_failover(
        api, "/v1/agents/me", {"persona": "cto"}, keyed, service="agents",
        redis_url=stack.redis_url, operator=operator,
    )  # fmt: skip

    assert (made["agent"]["user"], made["agent"]["persona"]) == (people.bob_id, "cto")
    mine = await (await api.get("/v1/agents/me", headers=people.bob)).json()
    assert mine["agent"] == made["agent"]


async def test_a_key_that_made_nothing_is_refused_as_before(api, people, operator, stack):
    """The agent exists, made by a request without the key: the keyed one, its refusal lost,
    is refused again, never told it made the agent."""
    made = await api.post("/v1/agents/me", json={"persona": "cto"}, headers=people.bob)
    assert made.status == 201, await made.text()
    keyed = people.bob | {"Idempotency-Key": "my-agent-2"}
    first = await api.post("/v1/agents/me", json={"persona": "cto"}, headers=keyed)
    assert await problem(first) == (409, "agent-exists")
    await forget_idempotency_key(stack.redis_url, "my-agent-2")
    await forget_kept_answers(operator, "agents")

    again = await api.post("/v1/agents/me", json={"persona": "cto"}, headers=keyed)

    assert await problem(again) == (409, "agent-exists")


async def test_a_key_its_gateway_forgot_used_for_another_agent_is_refused(
    api, people, operator, stack
):
    await set_plan(operator, people.org, "pro")
    keyed = people.root | {"Idempotency-Key": "org-agent-3"}
    first = await api.post("/v1/agents", json={"persona": "cto"}, headers=keyed)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, "org-agent-3")
    await forget_kept_answers(operator, "agents")

    other = await api.post("/v1/agents", json={"persona": "self"}, headers=keyed)

    assert await problem(other) == (422, "idempotency-key-reused")
    bill = await (await api.get("/v1/billing", headers=people.root)).json()
    assert bill["capacity"]["agents"]["in_use"] == 1
