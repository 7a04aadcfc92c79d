"""What waited on a person in the rooms and is done is kept for a while, then removed by
the server: a draft sent or discarded, and the marker of a failed delivery dismissed. Kept
here for two seconds, not a week. Before, each stayed for good, and every read of a
person's pending list read every draft their agent ever held for them (up to 16,000
characters each), and every failure they ever dismissed."""

import pytest

from libs.contracts.base import key_token
from libs.runtime.leader import newest_seq
from tests.personal.conftest import announce, drafts, eventually, problem, room_with, say
from tests.personal.test_delivery import _sent_by_line, status

STREAM = "KV_rooms"


@pytest.fixture
def settled_kept() -> int:
    """TETHER_SETTLED_KEPT, as the services read it."""
    return 2


@pytest.fixture
def api(whole_api):
    return whole_api


async def _gone(js, key: str) -> bool:
    return await newest_seq(js, STREAM, f"$KV.rooms.{key}") == 0


async def _ttl(js, key: str) -> str | None:
    return ((await js.get_last_msg(STREAM, f"$KV.rooms.{key}")).headers or {}).get("Nats-TTL")


async def test_a_draft_sent_or_discarded_is_kept_a_while_and_an_open_one_for_good(
    api, people, operator
):
    js = operator.jetstream()
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    for text in ("Lunch?", "Dinner?", "Breakfast?"):
        await say(api, room, people.bob, text, to=people.ada_id)
    held = await eventually(lambda: _three(api, room, people.ada))
    sent, discarded, waiting = (
        f"draft.{key_token(people.ada_id)}.{room['id']}.{d['id']}" for d in held
    )
    base = f"/v1/rooms/{room['id']}/drafts"
    response = await api.post(f"{base}/{held[0]['id']}/send", json={}, headers=people.ada)
    assert response.status == 201, await response.text()
    response = await api.post(f"{base}/{held[1]['id']}/discard", json={}, headers=people.ada)
    assert response.status == 200, await response.text()
    assert (await _ttl(js, sent), await _ttl(js, discarded)) == ("2s", "2s")
    assert await _ttl(js, waiting) is None

    await eventually(lambda: _both_gone(js, sent, discarded), timeout=30)
    assert [d["id"] for d in await drafts(api, room, people.ada)] == [held[2]["id"]]
    assert not await _gone(js, waiting)
    again = await api.post(f"{base}/{held[1]['id']}/discard", json={}, headers=people.ada)
    assert await problem(again) == (404, "draft-not-found")


async def _three(api, room: dict, headers: dict) -> list[dict] | None:
    found = await drafts(api, room, headers)
    return sorted(found, key=lambda d: d["reply_to"]) if len(found) == 3 else None


async def _both_gone(js, *keys: str) -> bool:
    return all([await _gone(js, key) for key in keys])


async def test_a_failed_delivery_dismissed_leaves_a_marker_that_expires(api, operator, people):
    js = operator.jetstream()
    line, room, sent = await _sent_by_line(api, operator, people)
    failed = await status(api, line, sent["delivery"]["carrier_id"], "undelivered")
    assert (await failed.json())["status"] == "failed"
    key = f"failed.{key_token(people.ada_id)}.{room['id']}.{sent['seq']}"
    path = f"/v1/rooms/{room['id']}/messages/{sent['seq']}/dismiss"
    dismissed = await api.post(path, json={}, headers=people.ada)
    assert dismissed.status == 200, await dismissed.text()
    assert await _ttl(js, key) == "2s"
    await eventually(lambda: _gone(js, key), timeout=30)
    again = await api.post(path, json={}, headers=people.ada)
    assert await problem(again) == (409, "not-failed")
