"""The agent answers (hip-0524 §1, §10): a message to a person is drafted by that person's
agent only, one to the org by the org's ambient agent only, one to neither by neither;
the agent is shown only the room it answers in; each drafting is a metered run."""

import asyncio

import pytest

from tests.personal.conftest import (
    announce,
    drafts,
    eventually,
    problem,
    room_with,
    say,
)
from tests.support import bearer, set_plan, token


@pytest.fixture
async def staffed(api, operator, people):
    """Ada and Bob have their agents; the org, on the team plan, has its ambient agent."""
    await announce(operator, people.ada_id, people.bob_id)
    await set_plan(operator, people.org, "team")
    response = await api.post(
        "/v1/agents", json={"persona": "self", "ambient": True}, headers=people.root
    )
    assert response.status == 201, await response.text()
    assert (await response.json())["id"] == f"agent:{people.org}"

    async def both() -> bool:
        statuses = [
            (await api.get("/v1/agents/me", headers=h)).status for h in (people.ada, people.bob)
        ]
        return statuses == [200, 200]

    assert await eventually(both)
    return await room_with(api, people, people.bob_id, f"{people.org}/root")


async def test_a_message_to_a_person_is_drafted_by_their_agent_only(api, people, staffed, acks):
    sent = await say(api, staffed, people.bob, "Ada, can you review my PR?", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, staffed, people.ada))
    assert (draft["agent"], draft["person"], draft["reply_to"], draft["state"]) == (
        f"agent:{people.ada_id}",
        people.ada_id,
        sent["seq"],
        "open",
    )
    assert "review my PR" in draft["text"]
    await acks.caught_up("EVENTS", "agents")
    assert await drafts(api, staffed, people.bob) == []
    assert await drafts(api, staffed, people.root) == []  # the ambient agent stayed silent


async def test_a_message_to_the_org_is_drafted_by_the_org_agent_only(api, people, staffed):
    await say(api, staffed, people.bob, "Who handles expense reports?", to="org")
    [draft] = await eventually(lambda: drafts(api, staffed, people.root))
    assert (draft["agent"], draft["person"]) == (f"agent:{people.org}", "org")
    assert await drafts(api, staffed, people.ada) == []
    assert await drafts(api, staffed, people.bob) == []


async def test_a_message_to_neither_is_answered_by_neither(api, people, staffed, acks):
    await say(api, staffed, people.bob, "Morning all.")
    ambient = bearer(token(org=people.org, user=f"{people.org}/root", act=f"agent:{people.org}"))
    await say(api, staffed, ambient, "The org's agent's note, to Bob.", to=people.bob_id)
    await acks.caught_up("EVENTS", "agents")
    for who in (people.ada, people.bob, people.root):
        assert await drafts(api, staffed, who) == []


async def test_the_agent_sees_only_the_room_it_answers_in(api, people, staffed, model):
    other = await room_with(api, people, people.bob_id, title="other")
    await say(api, other, people.bob, "SECRET-OTHER-ROOM launch date", to=people.ada_id)
    await eventually(lambda: drafts(api, other, people.ada))
    await say(api, staffed, people.ada, "SEEN-SAME-ROOM context")
    await say(api, staffed, people.bob, "QUESTION-HERE any news?", to=people.ada_id)
    await eventually(lambda: drafts(api, staffed, people.ada))
    [prompt] = [p for p in model.prompts if "QUESTION-HERE" in str(p)]
    shown = str(prompt)
    assert "SEEN-SAME-ROOM" in shown and "SECRET-OTHER-ROOM" not in shown
    roles = [(t.role, t.name) for t in prompt.turns]
    assert roles == [("assistant", people.ada_id), ("user", people.bob_id)]


async def test_a_person_sends_their_agents_draft_as_their_own_message(api, people, staffed):
    await say(api, staffed, people.bob, "Lunch?", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, staffed, people.ada))
    path = f"/v1/rooms/{staffed['id']}/drafts/{draft['id']}/send"
    response = await api.post(path, json={"text": "Yes, 12:30."}, headers=people.ada)
    assert response.status == 201, await response.text()
    sent = await response.json()
    assert (sent["author"], sent["author_kind"], sent["drafted_by"], sent["text"]) == (
        people.ada_id,
        "human",
        f"agent:{people.ada_id}",
        "Yes, 12:30.",
    )
    assert sent["to"] == people.bob_id and sent["reply_to"] == draft["reply_to"]
    assert await drafts(api, staffed, people.ada) == []
    again = await api.post(path, json={}, headers=people.ada)
    assert await problem(again) == (409, "draft-closed")
    for who in (people.bob, people.ada_agent):
        assert (await problem(await api.post(path, json={}, headers=who)))[0] in (403, 404)


async def test_a_discarded_draft_sends_nothing(api, people, staffed):
    await say(api, staffed, people.bob, "Ping", to=people.ada_id)
    [draft] = await eventually(lambda: drafts(api, staffed, people.ada))
    before = await (await api.get(f"/v1/rooms/{staffed['id']}/messages", headers=people.ada)).json()
    path = f"/v1/rooms/{staffed['id']}/drafts/{draft['id']}/discard"
    assert (await (await api.post(path, json={}, headers=people.ada)).json())[
        "state"
    ] == "discarded"
    after = await (await api.get(f"/v1/rooms/{staffed['id']}/messages", headers=people.ada)).json()
    assert after == before


async def test_a_draft_sent_and_discarded_at_once_is_one_or_the_other(api, people, staffed):
    """Ada sends a draft from her phone as she discards it on her laptop. Before, both
    were answered as done, every time: told it was discarded, she had sent it."""
    for i in range(12):
        await say(api, staffed, people.bob, f"Question {i}?", to=people.ada_id)

    async def all_held() -> list[dict]:
        found = await drafts(api, staffed, people.ada)
        return found if len(found) == 12 else []

    held = await eventually(all_held)
    outcomes = {}
    for draft in held:
        path = f"/v1/rooms/{staffed['id']}/drafts/{draft['id']}"
        sent, discarded = await asyncio.gather(
            api.post(f"{path}/send", json={}, headers=people.ada),
            api.post(f"{path}/discard", json={}, headers=people.ada),
        )
        outcomes[draft["reply_to"]] = (sent.status, discarded.status)
    assert set(outcomes.values()) <= {(201, 409), (409, 200)}, outcomes
    messages = await (
        await api.get(f"/v1/rooms/{staffed['id']}/messages", headers=people.ada)
    ).json()
    answered = sorted(m["reply_to"] for m in messages["messages"] if m["author"] == people.ada_id)
    assert answered == sorted(seq for seq, (sent, _) in outcomes.items() if sent == 201)


async def test_each_drafting_is_a_run_the_meter_bills_per_second(api, people, staffed):
    for i in range(3):
        await say(api, staffed, people.bob, f"question {i}", to=people.ada_id)

    async def billed():
        bill = await (await api.get("/v1/billing", headers=people.root)).json()
        runs = {a["agent"]: a for a in bill["agents"]}
        mine = runs.get(f"agent:{people.ada_id}")
        return bill if mine and mine["runs"] == 3 else None

    bill = await eventually(billed)
    [ada] = [a for a in bill["agents"] if a["user"] == people.ada_id]
    assert ada["seconds"] == 3  # each run bills its started seconds, at least one
    assert bill["rate_usd_per_hour"] == "0.12"
    assert bill["amount_usd"] == f"{0.12 * bill['seconds'] / 3600:.6f}"
    assert bill["capacity"]["agents"] == {"allowed": 25, "in_use": 1}


async def test_the_agent_sees_its_rooms_history_however_busy_other_rooms_are(
    api, people, staffed, model
):
    await say(api, staffed, people.ada, "EARLIER-CONTEXT from before the rush")
    busy = await room_with(api, people, people.bob_id, title="busy")
    for i in range(250):  # more of the stream than the first look back spans
        await say(api, busy, people.bob, f"noise {i}")
    await say(api, staffed, people.bob, "AFTER-RUSH what did we decide?", to=people.ada_id)
    await eventually(lambda: drafts(api, staffed, people.ada))
    [prompt] = [p for p in model.prompts if "AFTER-RUSH" in str(p)]
    assert "EARLIER-CONTEXT" in str(prompt) and "noise" not in str(prompt)
