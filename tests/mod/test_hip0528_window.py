"""hip-0528 §9.4 rule 2 at a window's end, through the running services: the mod service's
clock runs 57 s behind, so a person's one-minute window ends three real seconds after their
agent's draft, on the scheduler's timer. Every wait is for a definite state."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from libs.audit.reading import records
from tests.mod.conftest import HIDE_BOARD, level, write
from tests.personal.conftest import eventually

BEHIND = timedelta(seconds=57)


@pytest.fixture
def mod_clock() -> Callable[[], datetime]:
    return lambda: datetime.now(UTC) - BEHIND


async def draft_of(api, headers: dict, draft_id: str) -> dict:
    r = await api.get(f"/v1/mod/drafts/{draft_id}", headers=headers)
    assert r.status == 200, await r.text()
    return await r.json()


async def agent_draft(api, people) -> dict:
    await level(api, people.ada, "send", window="1m")
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    draft = (await r.json())["draft"]
    assert draft["commits_at"]
    return draft


async def settled(api, people, draft: dict) -> dict:
    """The draft once its window's end has been handled: kept, or waiting for Keep."""

    async def check():
        found = await draft_of(api, people.ada, draft["id"])
        return found if found["state"] != "open" or "waits" in found else None

    found = await eventually(check, timeout=20)
    assert found, f"{draft['id']} was not handled at its window's end"
    return found


async def test_hip0528_09_4_rule_2_a_draft_commits_itself_at_the_end_of_a_1m_window(
    api, people, operator
):
    draft = await agent_draft(api, people)
    found = await settled(api, people, draft)
    assert found["state"] == "kept"
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["version"] == found["version"] and layer["ops"] == [HIDE_BOARD]
    assert layer["change"]["draft"] == draft["id"]
    actions = [r.action for r in await records(operator.jetstream(), people.org)]
    assert actions[-3:] == ["mod.draft.create", "mod.draft.self_commit", "mod.draft.kept"]


async def test_hip0528_09_4_rule_2_a_level_lowered_during_the_window_leaves_it_for_keep(
    api, people
):
    draft = await agent_draft(api, people)
    await level(api, people.ada, "confirm")
    found = await settled(api, people, draft)
    assert found["state"] == "open" and "lowered to confirm" in found["waits"]
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["version"] == 0


async def test_hip0528_09_4_rule_2_a_layer_moved_during_the_window_leaves_it_for_keep(api, people):
    draft = await agent_draft(api, people)
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    assert (await write(api, people.ada, "user", [rename])).status == 200
    found = await settled(api, people, draft)
    assert found["state"] == "open" and "moved" in found["waits"]
