"""hip-0524 §16.10 and §11: on a live call there is no window; the agent speaks only at
send, and confirm is never shortened into a window."""

import msgspec
import pytest

from libs.contracts.ladder import DECIDE, ROUTE
from tests.personal.conftest import history, room_with, say, set_level


async def decide(nc, people, room: str, **fields) -> dict:
    """Ask the ladder as the agents service does (its credential is the subject)."""
    body = {"org": people.org, "person": people.ada_id, "room": room, **fields}
    reply = await nc.request(DECIDE.published_by("agents"), msgspec.json.encode(body), timeout=5)
    return msgspec.json.decode(reply.data)


@pytest.mark.parametrize(
    "level, action, window",
    [("draft", "silent", None), ("confirm", "silent", None), ("send", "send", "instant")],
)
async def test_on_a_live_call_only_send_speaks_and_never_after_a_window(
    api, people, connect, level, action, window
):
    await set_level(api, people.ada, level)
    await api.put("/v1/ladder/window", json={"window": "15m"}, headers=people.ada)
    async with connect("agents") as nc:
        decided = await decide(nc, people, "r-00000000000000bb", synchronous=True)
    assert (decided["level"], decided["action"], decided["window"]) == (level, action, window)


async def test_a_confirm_on_a_live_call_stores_no_question_and_sends_nothing(api, people, connect):
    await api.post("/v1/agents/me", json={}, headers=people.ada)
    await set_level(api, people.ada, "confirm")
    room = await room_with(api, people, people.bob_id)
    asked = await say(api, room, people.bob, "(on the phone) Are you there?")
    reply = {
        "org": people.org,
        "person": people.ada_id,
        "room": room["id"],
        "synchronous": True,
        "reply_to": asked["seq"],
        "candidates": ["Yes, go on."],
    }
    async with connect("agents") as nc:
        routed = await nc.request(
            ROUTE.published_by("agents"), msgspec.json.encode(reply), timeout=5
        )
    assert msgspec.json.decode(routed.data)["decision"]["action"] == "silent"
    assert await history(api, room, people.ada) == [asked]


async def test_a_first_contact_on_a_live_call_is_not_answered_even_at_send(api, people, connect):
    await set_level(api, people.ada, "send")
    async with connect("agents") as nc:
        decided = await decide(
            nc, people, "r-00000000000000cc", synchronous=True, first_contact=True
        )
    assert decided["action"] == "silent"
