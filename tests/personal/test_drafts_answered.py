"""A person's own answer lets go their agent's draft of a reply to what they answered. At
`draft`, the default, the agent drafts a reply to each message said to its person. Before,
a person who answered themself (as most often they do in a chat) kept every one of those
drafts in their pending list for good, each offering to send a second answer after theirs.
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from libs.audit.reading import records as audit_records
from libs.model import Prompt
from tests.acks import Acks
from tests.personal.conftest import (
    Recorder,
    announce,
    drafts,
    eventually,
    problem,
    room_with,
    say,
)

T = TypeVar("T")


class Held(Recorder):
    """The built-in model, holding its reply to what `hold` names until `released`."""

    def __init__(self, acks: Acks) -> None:
        super().__init__()
        self.acks = acks
        self.hold, self.asked, self.released = "", asyncio.Event(), asyncio.Event()

    async def reply(self, prompt: Prompt) -> str:
        if self.hold and self.hold in str(prompt):
            self.asked.set()
            await self.released.wait()
        return await super().reply(prompt)

    async def answered_meanwhile(
        self, held: str, ask: Callable[[], Awaitable[T]], answer: Callable[[], Awaitable]
    ) -> T:
        """`ask` said (the message `held` names), `answer` given by its person while their
        agent drafts the reply, then the reply let go, until the agents service has handled
        it: what `ask` returned."""
        self.hold = held
        asked = await ask()
        await asyncio.wait_for(self.asked.wait(), 10)
        await answer()
        self.released.set()
        await self.acks.caught_up("EVENTS", "agents")
        return asked

    async def bob_asked_ada_answered(self, api, people, room, ask: str, answer: str):
        """Bob asks Ada `ask` in `room`, and she answers `answer` while her agent drafts:
        Bob's message."""
        return await self.answered_meanwhile(
            ask,
            lambda: say(api, room, people.bob, ask, to=people.ada_id),
            lambda: say(api, room, people.ada, answer),
        )  # fmt: skip


@pytest.fixture
def model(acks) -> Held:
    return Held(acks)


@pytest.fixture
def api(whole_api):
    """Every service a person's pending list is gathered from."""
    return whole_api


async def _answered(operator, org: str) -> dict[str, dict]:
    found = await audit_records(operator.jetstream(), org)
    return {r.target: r for r in found if r.action == "rooms.draft.answered"}


async def test_her_own_words_let_go_the_drafts_they_answer_and_no_other(api, operator, people):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)  # Ada and Bob: a room of two sides
    lunch = await say(api, room, people.bob, "Lunch?", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    await say(api, room, people.ada, "Yes, 12:30.")  # her own, replying to nothing named

    async def let_go() -> bool:
        return await drafts(api, room, people.ada) == []

    await eventually(let_go)
    pending = await (await api.get("/v1/pending", headers=people.ada)).json()
    assert [i for i in pending["items"] if i["kind"] == "draft"] == []
    record = (await _answered(operator, people.org))[draft["id"]]
    assert record.actor is not None and record.actor.sub == people.ada_id
    assert record.actor.act is None and record.data["answered_by"] == lunch["seq"] + 1
    path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}/send"
    assert await problem(await api.post(path, json={}, headers=people.ada)) == (
        409, "draft-closed"
    )  # fmt: skip

    # A reply to one message answers that one: the draft for the other stays.
    dinner = await say(api, room, people.bob, "Dinner?", to=people.ada_id)
    breakfast = await say(api, room, people.bob, "Breakfast?", to=people.ada_id)

    async def both() -> list[dict] | None:
        found = await drafts(api, room, people.ada)
        return found if len(found) == 2 else None

    await eventually(both)
    await say(api, room, people.ada, "Dinner works.", reply_to=dinner["seq"])

    async def one_left() -> list[dict] | None:
        found = await drafts(api, room, people.ada)
        return found if len(found) == 1 else None

    [left] = await eventually(one_left)
    assert left["reply_to"] == breakfast["seq"]


async def test_a_draft_that_comes_after_her_answer_is_let_go_at_once(api, operator, people, model):
    """Her model slower than she is: she has answered before her agent's draft is held."""
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    await model.bob_asked_ada_answered(api, people, room, "Coffee at four?", "Can't today, sorry.")

    async def recorded() -> dict[str, dict]:
        return await _answered(operator, people.org)

    [record] = (await eventually(recorded)).values()
    assert record.actor is not None and record.actor.sub == people.ada_id
    assert await drafts(api, room, people.ada) == []
