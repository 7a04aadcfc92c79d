"""A message the agent answers is drafted in one run, however often it is delivered. The
agents service reads each message at least once: delivered again (its route failed, or the
replica died before acknowledging it), it routes what the agent drafted the first time.
Before, it ran the model again: a second metered run, whose other words were refused
under the reply's key once the person held the first run's question."""

import msgspec
import pytest

from libs.contracts.rooms import MESSAGE_STORED
from libs.model import Prompt
from services.agents.domain.prompt import acknowledged
from tests.personal.conftest import (
    Recorder,
    announce,
    eventually,
    room_with,
    say,
    set_level,
)


class Changing(Recorder):
    """A model that words its reply differently each time, as a real one may."""

    async def reply(self, prompt: Prompt) -> str:
        self.prompts.append(prompt)
        return f"{acknowledged(prompt)} (take {len(self.prompts)})"


@pytest.fixture
def model() -> Changing:
    return Changing()


async def test_a_message_delivered_again_is_answered_with_what_one_run_drafted(
    api, people, operator, model, acks
):
    js = operator.jetstream()
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "confirm")
    room = await room_with(api, people, people.bob_id)
    events = await operator.subscribe(MESSAGE_STORED.name)
    asked = await say(api, room, people.bob, "LUNCH-ONCE on Friday?", to=people.ada_id)

    async def confirmations() -> list[dict]:
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return [c for c in listed["confirmations"] if c["room"] == room["id"]]

    [confirmation] = await eventually(confirmations)
    first = confirmation["candidates"]
    event = None
    while event is None or (event["room"], event["seq"]) != (room["id"], asked["seq"]):
        stored = await events.next_msg(timeout=10)
        event = msgspec.json.decode(stored.data)
    await events.unsubscribe()

    await js.publish(MESSAGE_STORED.name, stored.data)  # delivered again
    await acks.caught_up("EVENTS", "agents")
    assert len([p for p in model.prompts if "LUNCH-ONCE" in str(p)]) == 1
    assert [c["candidates"] for c in await confirmations()] == [first]
