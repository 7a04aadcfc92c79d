"""hip-0524 §1: a person's agent is made when their account is. The agents' reader handles
what it fetches at once: behind (started again, or slow), it fetched a person's account
announced together with a message for them, read the message first, found no agent, and
no one ever answered it. A replica now handles what it holds about one person in the order
it came (`in_order_of`), and a message read before its person's agent is made (by another
replica, or the person put in a room first) waits for it (`agents-awaiting`)."""

import contextlib

import msgspec
import pytest
from nats.js.errors import NoKeysError

from libs.contracts import agents
from libs.contracts.accounts import ACCOUNT_CREATED, AccountCreated
from services.agents.answering import AWAITING
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


async def test_a_message_read_before_its_persons_account_is_answered_once_the_account_is(
    api, operator, people, settings_for, model, acks
):
    """Two replicas, one reading a person's account and the other a message for them, could
    handle the message first: it found no agent, and no one answered it. A message read
    before its person's agent is made now waits for it (`agents-awaiting`, an hour), and is
    answered when the account is read, once, with its note let go. Published first here, the
    message is read first by the one replica as another's would have."""

    def counted(outcome: str) -> float:
        return AWAITING.labels(outcome)._value.get()

    before = counted("awaiting"), counted("answered")
    async with serving(
        agents.CONTRACT, settings_for("agents"), lambda svc: serve_agents(svc, model)
    ):
        room = await room_with(api, people, people.bob_id)
        asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)
        await acks.caught_up("EVENTS", "agents")
        assert await drafts(api, room, people.ada) == []
        assert counted("awaiting") >= before[0] + 1  # and others' events the durable held
        account = msgspec.json.encode(AccountCreated(user=people.ada_id))
        await operator.jetstream().publish(ACCOUNT_CREATED.name, account)
        await operator.jetstream().publish(ACCOUNT_CREATED.name, account)  # told twice
        await acks.caught_up("EVENTS", "agents")
        [draft] = await drafts(api, room, people.ada)
        assert draft["reply_to"] == asked["seq"]
        assert counted("answered") >= before[1] + 1
        awaiting = await operator.jetstream().key_value("agents-awaiting")
        with contextlib.suppress(NoKeysError):  # the bucket is the session's, the org this test's
            assert [k for k in await awaiting.keys() if k.startswith(f"{people.org}.")] == []
