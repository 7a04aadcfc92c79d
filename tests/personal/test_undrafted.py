"""A person is told when their agent could not draft its reply. The agents' reader parks a
message whose every try failed (a model down for longer than its retries, about two
minutes). Before, the person whose agent it was waited for a draft, a question or a send
that never came, told by nothing; an operator alone could see the dead letter."""

from datetime import datetime

import msgspec
import pytest

from libs.audit.reading import records as audit_records
from libs.contracts import agents
from libs.model import ModelUnavailable, Prompt
from libs.runtime import dead
from services.agents.answering import UNDRAFTED_NOTICE
from services.agents.main import serve as serve_agents
from tests.personal.conftest import (
    Recorder,
    announce,
    eventually,
    history,
    room_with,
    say,
)
from tests.support import FAST_RETRY, serving, set_plan


class Down(Recorder):
    """A provider that answers nothing but 503 while `down`."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True

    async def reply(self, prompt: Prompt) -> str:
        if self.down:
            raise ModelUnavailable("https://models.example/v1 answered 503: b'overloaded'")
        return await super().reply(prompt)


@pytest.fixture
def model() -> Down:
    return Down()


@pytest.fixture
async def agents_service(settings_for, model, audit_service):
    async with serving(
        agents.CONTRACT,
        settings_for("agents"),
        lambda svc: serve_agents(svc, model, retry=FAST_RETRY),
    ) as svc:
        yield svc


async def test_a_person_is_told_alone_when_their_agent_could_not_reply(
    api, operator, people, model
):
    await announce(operator, people.ada_id)
    await eventually(lambda: _ok(api.get("/v1/agents/me", headers=people.ada)))
    room = await room_with(api, people, people.bob_id)
    asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)

    async def told() -> list[dict]:
        return [m for m in await history(api, room, people.ada) if m.get("notice")]

    [notice] = await eventually(told)
    assert notice["text"] == UNDRAFTED_NOTICE
    assert notice["reply_to"] == asked["seq"]
    assert notice["author"] == f"agent:{people.ada_id}"
    assert notice["to"] == people.ada_id and notice["private"] is True
    # Hers alone: Bob, in the same room, reads his question and nothing else.
    assert [m["seq"] for m in await history(api, room, people.bob)] == [asked["seq"]]
    # Recorded in the org's trail, before the notice was stored.
    records = await audit_records(operator.jetstream(), people.org)
    [undrafted] = [r for r in records if r.action == "agents.reply.undrafted"]
    assert undrafted.target == f"{room['id']}:{asked['seq']}"
    assert undrafted.data["agent"] == f"agent:{people.ada_id}"
    assert "model-unavailable" in undrafted.data["error"]
    assert undrafted.at <= datetime.fromisoformat(notice["at"])
    # Nothing of the agent's reached her otherwise: no draft is open.
    drafts = await api.get(f"/v1/rooms/{room['id']}/drafts", headers=people.ada)
    assert (await drafts.json())["drafts"] == []


async def test_an_org_agents_failure_tells_no_one(api, operator, people, model, acks):
    """The org's agent drafts for the org, which has no one person to tell: its dead letter
    is parked, and no notice is stored in the room."""
    await set_plan(operator, people.org, "team")
    made = await api.post(
        "/v1/agents", json={"persona": "self", "ambient": True}, headers=people.root
    )
    assert made.status == 201, await made.text()
    room = await room_with(api, people, people.bob_id)
    asked = await say(api, room, people.bob, "Who handles expense reports?", to="org")

    async def parked() -> bool:
        letters = await dead.parked(operator, "agents.agents")
        stored = [msgspec.json.decode(letter.data) for letter in letters]
        return any((m["room"], m["seq"]) == (room["id"], asked["seq"]) for m in stored)

    await eventually(parked)
    await acks.caught_up("EVENTS", "agents")
    assert [m["seq"] for m in await history(api, room, people.bob)] == [asked["seq"]]
    assert [m["seq"] for m in await history(api, room, people.ada)] == [asked["seq"]]
    records = await audit_records(operator.jetstream(), people.org)
    assert not [r for r in records if r.action == "agents.reply.undrafted"]


async def _ok(response) -> bool:
    return (await response).status == 200
