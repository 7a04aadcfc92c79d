"""hip-0528 §9.5's stream and §9.4 rule 8's expiry, through the running services: a watcher
of the KV plane sees each new version and each draft's changes, its expiry included (drafts
live four seconds here)."""

import asyncio
from datetime import timedelta

import msgspec
import pytest

from libs.audit.reading import records
from tests.mod.conftest import HIDE_BOARD, write


@pytest.fixture
def draft_ttl() -> timedelta:
    return timedelta(seconds=4)


async def events(response, wanted: int, timeout: float = 20) -> list[tuple[str, dict]]:
    """The next `wanted` events of a stream."""
    found: list[tuple[str, dict]] = []
    name = None

    async def read() -> None:
        nonlocal name
        while len(found) < wanted:
            line = (await response.content.readline()).decode().strip()
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name:
                found.append((name, msgspec.json.decode(line.removeprefix("data: "))))

    await asyncio.wait_for(read(), timeout)
    return found


async def watch(api, headers: dict):
    response = await api.get("/v1/mod/watch", headers=headers)
    assert response.status == 200
    assert (await response.content.readline()).startswith(b": watching")
    return response


async def test_hip0528_09_5_a_watcher_sees_versions_and_drafts_and_a_draft_expire(
    api, people, operator
):
    mine = await watch(api, people.ada)
    bobs = await watch(api, people.bob)
    v = (await (await write(api, people.ada, "user", [HIDE_BOARD])).json())["version"]
    draft = (await (await write(api, people.agent, "user", [HIDE_BOARD])).json())["draft"]
    seen = await events(mine, 3)
    assert seen[0] == ("layer", {"layer": "user", "version": v})
    assert seen[1] == ("draft", {"layer": "user", "id": draft["id"], "state": "open"})
    assert seen[2] == ("draft", {"layer": "user", "id": draft["id"], "state": "expired"})
    org = (await (await write(api, people.root, "org", [HIDE_BOARD])).json())["version"]
    assert await events(bobs, 1) == [("layer", {"layer": "org", "version": org})]
    actions = [r.action for r in await records(operator.jetstream(), people.org)]
    assert "mod.draft.expire" in actions
    mine.close()
    bobs.close()
