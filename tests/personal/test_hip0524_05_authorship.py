"""hip-0524 §16.5 and §7: every stored message carries its authoring kind and, for an agent,
the person it acted for, set by the server from the credential; a request that names any
of them is refused; every agent-sent message is stored."""

import secrets

import msgspec
import pytest

from libs.contracts import codec, rooms
from tests.personal.conftest import problem, room_with, say
from tests.support import bearer, org_agent, token


async def _history(api, room, headers) -> list[dict]:
    response = await api.get(f"/v1/rooms/{room['id']}/messages", headers=headers)
    assert response.status == 200, await response.text()
    return (await response.json())["messages"]


async def test_a_persons_message_is_stored_as_theirs(api, people):
    room = await room_with(api, people, people.bob_id)
    sent = await say(api, room, people.ada, "hello bob", to=people.bob_id)
    assert (sent["author"], sent["author_kind"], sent.get("on_behalf_of")) == (
        people.ada_id,
        "human",
        None,
    )
    assert await _history(api, room, people.bob) == [sent]


async def test_an_agents_question_is_stored_with_the_person_it_acted_for(api, people):
    room = await room_with(api, people, people.bob_id)
    body = {"text": "Shall I accept?", "to": people.ada_id, "options": ["yes", "no"]}
    r = await api.post(f"/v1/rooms/{room['id']}/questions", json=body, headers=people.ada_agent)
    assert r.status == 201, await r.text()
    asked = await r.json()
    assert (asked["author"], asked["author_kind"], asked["on_behalf_of"]) == (
        f"agent:{people.ada_id}",
        "agent",
        people.ada_id,
    )
    assert await _history(api, room, people.ada) == [asked]  # stored, not only transmitted
    assert await _history(api, room, people.bob) == []  # hers alone


async def test_a_persons_own_agent_posts_nothing_past_their_ladder(api, people):
    """§4: at `draft`, the default, the agent cannot send. Its reply to what is said to
    its person is the ladder's to hold, ask about or send (the ladder's own tests); a post
    of its own, or a question to anyone but its person, is refused and stores nothing.
    Before, its token posted straight into the room, and by a line to the outside."""
    room = await room_with(api, people, people.bob_id)
    post = {"text": "Ada's agent here", "to": people.bob_id}
    ask = {"text": "Lunch?", "to": people.bob_id, "options": ["yes", "no"]}
    for path, body in (("messages", post), ("messages", {"text": "to all"}), ("questions", ask)):
        r = await api.post(f"/v1/rooms/{room['id']}/{path}", json=body, headers=people.ada_agent)
        assert await problem(r) == (403, "ladder-decides"), (path, body)
    assert await _history(api, room, people.ada) == []
    assert await _history(api, room, people.bob) == []


async def test_a_bots_message_is_stored_as_a_bots(api, operator, people):
    bot = await org_agent(api, operator, people.org, people.root, "researcher", "bot")
    room = await room_with(api, people, bot)
    as_bot = bearer(token(org=people.org, user=people.ada_id, act=bot))
    sent = await say(api, room, as_bot, "daily standup reminder")
    assert (sent["author"], sent["author_kind"]) == (bot, "bot")


async def test_what_a_chonk_tells_a_person_is_not_written_as_theirs(api, operator, people):
    """A manager agent is a bot of its org (manager-agents §1) and speaks for it. What it
    tells a person is its own word to them: before, it was stored `on_behalf_of` the very
    person it told, as if it had written as them (§7: a person may disown only what says
    so truly)."""
    tell = rooms.Tell(org=people.org, person=people.ada_id, bot="chonk-build",
                      title="Chief Build Officer", text="A nudge on #419.",
                      key=f"nudge-{secrets.token_hex(4)}")  # fmt: skip
    reply = await operator.request(rooms.TELL.published_by("chonk"), codec.encode(tell), timeout=10)
    told = msgspec.json.decode(reply.data)
    [stored] = await _history(api, {"id": told["room"]}, people.ada)
    assert (stored["author"], stored["author_kind"], stored.get("on_behalf_of")) == (
        f"bot:{people.org}:chonk-build",
        "bot",
        None,
    )
    assert stored["to"] == people.ada_id


@pytest.mark.parametrize(
    "field", ["sender", "author", "author_kind", "on_behalf_of", "org", "sub", "act"]
)
async def test_a_send_that_names_who_wrote_it_is_refused_and_stores_nothing(api, people, field):
    room = await room_with(api, people)
    body = {"text": "trust me", field: people.bob_id}
    response = await api.post(f"/v1/rooms/{room['id']}/messages", json=body, headers=people.ada)
    assert await problem(response) == (422, "identity-in-body")
    assert field in (await response.json())["detail"]
    assert await _history(api, room, people.ada) == []


async def test_a_send_with_any_unknown_field_is_refused_by_name(api, people):
    room = await room_with(api, people)
    body = {"text": "hi", "drafted_by": "agent:x"}
    response = await api.post(f"/v1/rooms/{room['id']}/messages", json=body, headers=people.ada)
    status, _ = await problem(response)
    assert status == 422 and "drafted_by" in (await response.json())["detail"]
    assert await _history(api, room, people.ada) == []


async def test_an_agent_that_is_not_in_the_room_sends_nothing(api, people):
    room = await room_with(api, people)  # ada alone
    bobs_agent = bearer(token(org=people.org, user=people.bob_id, act=f"agent:{people.bob_id}"))
    response = await api.post(
        f"/v1/rooms/{room['id']}/messages", json={"text": "x"}, headers=bobs_agent
    )
    assert await problem(response) == (404, "room-not-found")


async def test_to_names_a_person_in_the_room_or_the_org(api, people):
    room = await room_with(api, people, people.bob_id)
    for to, rule in ((f"{people.org}/carol", "invalid-to"), (people.ada_id, "invalid-to")):
        response = await api.post(
            f"/v1/rooms/{room['id']}/messages", json={"text": "x", "to": to}, headers=people.ada
        )
        assert await problem(response) == (422, rule)
    assert (await say(api, room, people.ada, "to all of acme", to="org"))["to"] == "org"


async def test_reply_to_names_a_message_of_the_room_its_sender_can_read(api, people):
    """The room is found; a reply_to naming no message of it is a field that is wrong (422),
    never a room not found. A message for ada alone is no message of bob's."""
    room = await room_with(api, people, people.bob_id)
    asked = await say(api, room, people.bob, "lunch?", to=people.ada_id)
    body = {"text": "Hers alone?", "to": people.ada_id, "options": ["yes", "no"]}
    private = await api.post(f"/v1/rooms/{room['id']}/questions", json=body,
                             headers=people.ada_agent)  # fmt: skip
    assert private.status == 201, await private.text()
    for seq in (asked["seq"] + 1000, (await private.json())["seq"]):
        response = await api.post(
            f"/v1/rooms/{room['id']}/messages",
            json={"text": "re", "reply_to": seq},
            headers=people.bob,
        )
        assert await problem(response) == (422, "invalid-reply-to")
        assert str(seq) in (await response.json())["detail"]
    assert [m["seq"] for m in await _history(api, room, people.bob)] == [asked["seq"]]
    replied = await say(api, room, people.ada, "yes", reply_to=asked["seq"])
    assert replied["reply_to"] == asked["seq"]


async def test_history_is_ordered_and_paged_by_cursor(api, people):
    room = await room_with(api, people, people.bob_id)
    sent = [await say(api, room, people.ada, f"m{i}") for i in range(7)]
    seen, after = [], 0
    while True:
        page = await (
            await api.get(
                f"/v1/rooms/{room['id']}/messages",
                params={"after": after, "limit": 3},
                headers=people.bob,
            )
        ).json()
        seen += page["messages"]
        if page["next"] is None:
            break
        after = page["next"]
    assert [m["text"] for m in seen] == [f"m{i}" for i in range(7)]
    assert seen == sent
    response = await api.get(
        f"/v1/rooms/{room['id']}/messages", params={"limit": "many"}, headers=people.ada
    )
    assert await problem(response) == (422, "invalid-request")
