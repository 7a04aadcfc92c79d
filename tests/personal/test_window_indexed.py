"""hip-0524 §9 for an org's ceiling: lowering cancels every window open under the old
level, and the ceiling finds them by the org's index of open windows. A window whose
index entry was lost as the ladder wrote it (its replica's network failed there) was
held all the same, its route asked again found it held and left it so: the ceiling then
missed it, and it stayed open until its end. Now the window is indexed before it is held,
and the index's write is asked again when its answer does not come.

The break is made by a TCP proxy between the ladder replica and its server (`Link`),
which drops the index's write and cuts every connection through it for a second."""

import pytest

from libs.contracts import ladder
from libs.contracts.base import key_token
from services.ladder.main import serve as serve_ladder
from tests.personal.conftest import (
    announce,
    eventually,
    pending_send,
    room_with,
    say,
    set_level,
)
from tests.support import serving_across_a_link

INDEX_WRITE = b"PUB $KV.ladder.open."


@pytest.fixture
async def ladder_service(settings_for, ladder_clock, audit_service):
    """The ladder, its connection across a Link."""
    async with serving_across_a_link(
        ladder.CONTRACT, settings_for("ladder"), lambda svc: serve_ladder(svc, ladder_clock)
    ) as link:
        yield link


async def test_a_window_whose_index_write_was_lost_is_canceled_by_the_ceiling(
    api, ladder_service, operator, people
):
    link = ladder_service
    await announce(operator, people.ada_id)

    async def has_agent() -> bool:
        return (await api.get("/v1/agents/me", headers=people.ada)).status == 200

    await eventually(has_agent)
    await set_level(api, people.ada, "send")
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    room = await room_with(api, people, people.bob_id)
    link.cut_at(INDEX_WRITE, 1.0)
    await say(api, room, people.bob, "Send me the deck?", to=people.ada_id)

    async def windows() -> dict | None:
        listed = await api.get("/v1/windows", headers=people.ada)
        return await listed.json() if listed.status == 200 else None  # 503: the ladder away

    async def opened() -> list[dict] | None:
        return (found := await windows()) and found["windows"]

    [window] = await eventually(opened, timeout=30)
    lowered = await api.put("/v1/ladder/ceiling", json={"level": "confirm"}, headers=people.root)
    assert (await lowered.json())["canceled_windows"] == 1
    found = await windows()
    assert found is not None
    assert found["windows"] == []
    assert [(w["id"], w["state"]) for w in found["closed"]] == [(window["id"], "canceled")]


async def test_an_index_entry_is_removed_by_the_server_an_hour_after_its_window_would_end(
    api, ladder_service, operator, people
):
    """An entry whose window was never held (its route failed for good) is passed over by
    every ceiling; kept forever, it would be read by each one. It goes an hour after its
    window would have ended; an entry a window outlives only leaves the window to its end,
    which reads the level again."""
    _, window = await pending_send(api, people, operator)  # a 15 m window
    subject = f"$KV.ladder.open.{people.org}.{key_token(people.ada_id)}.{window['id']}"
    entry = await operator.jetstream().get_last_msg("KV_ladder", subject)
    assert (entry.headers or {}).get("Nats-TTL") == f"{15 * 60 + 3600}s"
