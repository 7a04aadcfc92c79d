"""Issue 10.7: rooms are bounded by the org's plan, paged, and of one org."""

import secrets
from datetime import UTC, datetime

import msgspec

from libs.contracts import codec
from libs.contracts.rooms import Member, Room
from libs.runtime.pages import PAGE_BYTES
from services.rooms.store import open_store
from tests.personal.conftest import problem, room_with, say


async def test_a_room_past_the_plans_members_is_refused_and_nothing_is_made(api, people):
    members = [f"{people.org}/p{i}" for i in range(20_000)]
    response = await api.post(
        "/v1/rooms", json={"title": "everyone", "members": members}, headers=people.ada
    )
    assert (await problem(response))[0] == 422
    listed = await (await api.get("/v1/rooms", headers=people.ada)).json()
    assert listed == {"rooms": [], "next": None}


async def test_a_room_up_to_the_plans_members_is_made_whole(api, people):
    """The free plan's number is the catalog's (services/agents/catalog.json)."""
    import json
    from importlib.resources import files

    catalog = json.loads(files("services.agents").joinpath("catalog.json").read_text())
    allowed = catalog["plans"]["free"]["limits"]["room_members"]
    members = [f"{people.org}/p{i}" for i in range(allowed - 1)]
    made = await room_with(api, people, *members)
    assert len([m for m in made["members"] if m["kind"] == "human"]) == allowed
    not_in_it = await api.get(f"/v1/rooms/{made['id']}", headers=people.bob)
    assert not_in_it.status == 404  # bob is not among them
    one_more = await api.post(
        "/v1/rooms", json={"title": "t", "members": [*members, people.bob_id]}, headers=people.ada
    )
    assert await problem(one_more) == (422, "too-many-members")


async def test_a_member_of_another_org_is_refused_by_name(api, people):
    eve = f"{people.org}-x/eve"
    response = await api.post(
        "/v1/rooms", json={"title": "t", "members": [people.bob_id, eve]}, headers=people.ada
    )
    body = await response.json(content_type=None)
    assert (response.status, body["errors"]) == (422, [eve])


async def test_a_title_with_a_control_character_is_refused_naming_it(api, people):
    for title in (
        "two\nlines", "a\x00b", "bell\x07", "del\x7f", "ends in a newline\n", "next\x85line",
        "line\u2028separator", "zero\u200bwidth", "right\u202eto left", "isolate\u2066d",
    ):  # fmt: skip
        response = await api.post("/v1/rooms", json={"title": title}, headers=people.ada)
        body = await response.json(content_type=None)
        assert (response.status, body["type"]) == (422, "urn:tether:problem:invalid-request")
        assert "$.title" in body["detail"], body
    listed = await (await api.get("/v1/rooms", headers=people.ada)).json()
    assert listed == {"rooms": [], "next": None}
    # What scripts and emoji need is text: a joiner, a non-joiner, a right-to-left mark.
    family, persian = (
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
    )
    for title in (family, persian, "a\u200fb"):
        response = await api.post("/v1/rooms", json={"title": title}, headers=people.ada)
        assert response.status == 201, await response.text()


async def test_a_member_or_a_room_id_with_a_final_newline_is_refused(api, people):
    """Python's `$` matched before it: a room was made with a member "<bob>\n", nobody,
    and an agent "agent:<bob>\n" beside them."""
    body = {"title": "t", "members": [people.bob_id + "\n"]}
    response = await api.post("/v1/rooms", json=body, headers=people.ada)
    assert (await problem(response)) == (422, "invalid-request")
    room = await room_with(api, people, people.bob_id)
    found = await api.get(f"/v1/rooms/{room['id']}%0A", headers=people.ada)
    assert (await problem(found)) == (422, "invalid-request")
    listed = await (await api.get("/v1/rooms", headers=people.ada)).json()
    assert [r["id"] for r in listed["rooms"]] == [room["id"]]


async def test_my_rooms_come_in_pages(api, people):
    made = sorted([(await room_with(api, people, title=f"r{i}"))["id"] for i in range(5)])
    seen, after = [], None
    while True:
        query = "?limit=2" + (f"&after={after}" if after else "")
        page = await (await api.get(f"/v1/rooms{query}", headers=people.ada)).json()
        assert len(page["rooms"]) <= 2
        seen += [r["id"] for r in page["rooms"]]
        after = page["next"]
        if after is None:
            break
    assert seen == made


async def test_a_page_of_large_rooms_ends_where_the_bus_could_carry_no_more(operator, org):
    """An enterprise room holds 2,000 people and their agents, some 200 KB: fifty of them
    in one answer would be ten times what the bus carries."""
    store = await open_store(operator)
    people = tuple(Member(kind="human", id=f"{org}/{'p' * 180}{i}") for i in range(300))
    made = sorted(f"r-{secrets.token_hex(8)}" for _ in range(16))
    for room_id in made:
        room = Room(
            id=room_id, org=org, scope="org", title="all hands", members=people,
            created_at=datetime.now(UTC),
        )  # fmt: skip
        assert await store.create_room(room)
    pages, after = [], None
    while True:
        found, after = await store.rooms_of(people[0].id, after=after, limit=50)
        assert len(codec.encode(found)) <= PAGE_BYTES
        pages.append([room.id for room in found])
        if after is None:
            break
    assert len(pages) > 1 and [i for page in pages for i in page] == made


async def test_a_page_of_long_messages_ends_where_the_bus_could_carry_no_more(api, people):
    """140 messages of the longest text are 2.2 MB: asked for 200 at once, a page ends
    within 512 KiB and its cursor leads on to the rest."""
    room = await room_with(api, people)
    said = [(await say(api, room, people.ada, f"{i % 10}" * 16_000))["seq"] for i in range(140)]
    seen, after, pages = [], 0, 0
    while after is not None:
        response = await api.get(
            f"/v1/rooms/{room['id']}/messages",
            params={"after": str(after), "limit": "200"},
            headers=people.ada,
        )
        body = await response.read()
        assert response.status == 200, body[:300]
        assert len(body) <= PAGE_BYTES + 1024
        page = msgspec.json.decode(body)
        seen += [m["seq"] for m in page["messages"]]
        after, pages = page["next"], pages + 1
    assert seen == said and pages > 1
