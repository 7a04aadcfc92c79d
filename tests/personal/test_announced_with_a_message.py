"""hip-0524 §1: a person's agent is made when their account is. The agents' reader handles
what it fetches at once: behind (started again, or slow), it fetched a person's account
announced together with a message for them, read the message first, found no agent, and
no one ever answered it. A replica now handles what it holds about one person in the order
it came (`in_order_of`)."""

import msgspec
import pytest

from libs.contracts import agents
from libs.contracts.accounts import ACCOUNT_CREATED, AccountCreated
from services.agents.main import serve as serve_agents
from tests.personal.conftest import SERVED, drafts, room_with, say
from tests.support import serving


@pytest.fixture
async def agents_service():
    """Away unless a test brings it up."""
    yield None


@pytest.fixture
async def api(client_for, gateway_settings, rooms_service, ladder_service, scheduler_service):
    return await client_for(gateway_settings, services=SERVED)


async def test_a_message_read_with_its_persons_account_is_answered_by_their_new_agent(
    api, operator, people, settings_for, model, acks
):
    def agents_up():
        return serving(
            agents.CONTRACT, settings_for("agents"), lambda svc: serve_agents(svc, model)
        )

    async with agents_up():  # a room is made within the plan's limits, which agents says
        room = await room_with(api, people, people.bob_id)
    account = msgspec.json.encode(AccountCreated(user=people.ada_id))
    await operator.jetstream().publish(ACCOUNT_CREATED.name, account)
    asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)
    async with agents_up():
        await acks.caught_up("EVENTS", "agents")
        [draft] = await drafts(api, room, people.ada)
    assert draft["reply_to"] == asked["seq"]
