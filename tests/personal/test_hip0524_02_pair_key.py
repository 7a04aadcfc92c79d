"""hip-0524 §16.2 and §2: the agent, its preferences, rooms and lines are keyed by the
person; a lookup that omits them finds nothing. An org admin may learn that a member has
an agent and what it costs, and never reads its instructions, memory or rooms."""

import pytest

from tests.personal.conftest import (
    announce,
    eventually,
    fresh_number,
    problem,
    room_with,
    say,
    set_level,
)

SECRET = "Never mention the Hartley acquisition."


@pytest.fixture
async def ada_setup(api, operator, people, model):
    """Ada with her agent, private preferences, a room with a draft in it, and a line."""
    await announce(operator, people.ada_id)
    prefs = {"instructions": SECRET, "signature": "— Ada"}
    assert (await api.put("/v1/preferences", json=prefs, headers=people.ada)).status == 200
    room = await (await api.post("/v1/rooms", json={"title": "private"}, headers=people.ada)).json()
    line = {"transport": "sms", "address": fresh_number(), "credential": "twilio-auth-token"}
    assert (await api.post("/v1/lines", json=line, headers=people.ada)).status == 201
    await say(api, room, people.ada, "note to self")
    await set_level(api, people.ada, "confirm")
    with_bob = await room_with(api, people, people.bob_id, title="with bob")
    await say(api, with_bob, people.bob, "Shall I book it?", to=people.ada_id)

    async def asked():
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return listed["confirmations"]

    [confirmation] = await eventually(asked)
    return room, confirmation


def _routes(room_id: str) -> list[tuple[str, str, dict | None]]:
    r = f"/v1/rooms/{room_id}"
    return [
        ("GET", r, None),
        ("GET", f"{r}/messages", None),
        ("GET", f"{r}/messages/stream", None),
        ("POST", f"{r}/messages", {"text": "hello"}),
        ("POST", f"{r}/questions", {"text": "ok?", "to": "x/y", "options": ["a", "b"]}),
        ("POST", f"{r}/questions/1/answer", {"choice": {"type": "decline"}}),
        ("GET", f"{r}/drafts", None),
        ("POST", f"{r}/drafts/d-{room_id[2:]}-1/send", {}),
        ("POST", f"{r}/drafts/d-{room_id[2:]}-1/discard", {}),
    ]


@pytest.mark.parametrize("who", ["root", "bob", "eve"])
async def test_no_one_else_reaches_anything_of_adas(api, people, ada_setup, who):
    headers = getattr(people, who)
    room, confirmation = ada_setup
    for method, path, body in _routes(room["id"]):
        response = await api.request(method, path, json=body, headers=headers)
        assert await problem(response) == (404, "room-not-found"), (method, path)
    rooms = await (await api.get("/v1/rooms", headers=headers)).json()
    assert room["id"] not in [r["id"] for r in rooms["rooms"]]
    mine = await api.get("/v1/agents/me", headers=headers)
    assert await problem(mine) == (404, "agent-not-found")
    prefs = await (await api.get("/v1/preferences", headers=headers)).json()
    assert SECRET not in str(prefs)
    lines = await (await api.get("/v1/lines", headers=headers)).json()
    assert lines == {"lines": []}
    response = await api.delete("/v1/lines/sms", headers=headers)
    assert await problem(response) == (404, "line-not-found")
    ladder = await (await api.get("/v1/ladder", headers=headers)).json()
    assert ladder["settings"]["default"] == "draft"  # their own, not Ada's confirm
    listed = await (await api.get("/v1/confirmations", headers=headers)).json()
    assert listed == {"confirmations": [], "more": False}
    response = await api.post(
        f"/v1/confirmations/{confirmation['id']}",
        json={"choice": {"type": "decline"}},
        headers=headers,
    )
    assert await problem(response) == (404, "confirmation-not-found")
    assert (await (await api.get("/v1/windows", headers=headers)).json()) == {
        "windows": [],
        "closed": [],
        "more": False,
    }
    # Ada's line, preferences and confirmation are untouched by all of it.
    assert len((await (await api.get("/v1/lines", headers=people.ada)).json())["lines"]) == 1
    assert (await (await api.get("/v1/preferences", headers=people.ada)).json())[
        "instructions"
    ] == SECRET
    mine = await (await api.get("/v1/confirmations", headers=people.ada)).json()
    assert [c["id"] for c in mine["confirmations"]] == [confirmation["id"]]


async def test_admin_learns_that_a_member_has_an_agent_and_its_cost_and_nothing_else(
    api, people, ada_setup
):
    bob_msg = {"title": "with bob", "members": [people.bob_id]}
    room = await (await api.post("/v1/rooms", json=bob_msg, headers=people.ada)).json()
    await say(api, room, people.bob, "are we on for friday?", to=people.ada_id)

    async def billed():
        bill = await (await api.get("/v1/billing", headers=people.root)).json()
        return bill if bill["agents"] and bill["agents"][0]["runs"] == 2 else None

    bill = await eventually(billed)
    assert bill["capacity"]["personal_agents"] == 1
    [agent] = bill["agents"]
    assert set(agent) == {"agent", "kind", "user", "runs", "seconds", "amount_usd"}
    assert (agent["agent"], agent["user"], agent["runs"]) == (
        f"agent:{people.ada_id}",
        people.ada_id,
        2,  # the question in the setup, and this one
    )
    assert SECRET not in str(bill) and "friday" not in str(bill)


async def test_billing_is_for_admins_of_the_org_alone(api, people, ada_setup):
    response = await api.get("/v1/billing", headers=people.ada)
    assert await problem(response) == (403, "admin-only")
    other = await (await api.get("/v1/billing", headers=people.eve)).json()
    assert other["org"] == f"{people.org}-x" and other["capacity"]["personal_agents"] == 0


async def test_an_agent_cannot_read_or_write_its_persons_preferences_over_http(
    api, people, ada_setup
):
    for method in ("GET", "PUT"):
        response = await api.request(method, "/v1/preferences", json={}, headers=people.ada_agent)
        assert await problem(response) == (403, "agent-may-not")
