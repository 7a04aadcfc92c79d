"""hip-0524 §16.4 and §4: no principal but the person raises their level; the agent cannot
reach its own setting (every attempt refused and audited); raising to send is its own
act, acknowledged in plain words; an org ceiling can only lower."""

import pytest

from libs.audit.reading import records as audit_records
from libs.contracts.ladder import SEND_MEANS
from tests.personal.conftest import problem, room_with, set_level
from tests.personal.test_hip0524_10_live_call import decide

LADDER_ROUTES = [
    ("GET", "/v1/ladder", None),
    ("PUT", "/v1/ladder", {"level": "send", "acknowledge": SEND_MEANS}),
    ("PUT", "/v1/ladder/window", {"window": "instant"}),
    ("PUT", "/v1/ladder/ceiling", {"level": "draft"}),
    ("GET", "/v1/windows", None),
    ("POST", "/v1/windows/w-0000000000000000/stop", {}),
    ("POST", "/v1/windows/w-0000000000000000/edit", {"text": "x"}),
    ("POST", "/v1/windows/w-0000000000000000/replace", {"text": "x"}),
    ("GET", "/v1/confirmations", None),
    ("POST", "/v1/confirmations/c-0000000000000000", {"choice": {"type": "decline"}}),
]


async def test_only_the_person_raises_their_own_level(api, people):
    changed = await set_level(api, people.ada, "confirm")
    assert changed["settings"]["default"] == "confirm"
    for other in (people.root, people.bob):  # each changes only their own
        await set_level(api, other, "confirm")
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert mine["settings"]["default"] == "confirm"
    others = await (await api.get("/v1/ladder", headers=people.root)).json()
    assert others["settings"]["default"] == "confirm"  # root's own, not ada's


async def test_the_agent_reaches_no_route_of_the_ladder_and_each_attempt_is_audited(
    api, people, operator
):
    for method, path, body in LADDER_ROUTES:
        response = await api.request(method, path, json=body, headers=people.ada_agent)
        assert await problem(response) == (403, "agent-may-not"), path
    records = await audit_records(operator.jetstream(), people.org)
    refused = [r for r in records if r.action == "ladder.agent.refused"]
    assert len(refused) == len(LADDER_ROUTES)
    assert {r.actor.act for r in refused} == {f"agent:{people.ada_id}"}
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert mine["settings"]["default"] == "draft"


async def test_send_is_its_own_act_with_its_meaning_acknowledged(api, people):
    for acknowledge in (None, "yes", SEND_MEANS.lower()):
        body = {"level": "send", "acknowledge": acknowledge}
        response = await api.put("/v1/ladder", json=body, headers=people.ada)
        assert await problem(response) == (422, "send-not-acknowledged")
        assert SEND_MEANS in (await response.json())["detail"]
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert mine["send_means"] == SEND_MEANS
    assert (await set_level(api, people.ada, "send"))["settings"]["default"] == "send"
    # an override raising a room to send is the same act, and needs the same words
    room = await room_with(api, people, people.bob_id)
    body = {"level": "send", "scope": "room", "target": room["id"]}
    await set_level(api, people.ada, "draft")
    response = await api.put("/v1/ladder", json=body, headers=people.ada)
    assert await problem(response) == (422, "send-not-acknowledged")


async def test_the_ceiling_is_an_admins_and_only_lowers_a_persons_level(api, people):
    response = await api.put("/v1/ladder/ceiling", json={"level": "draft"}, headers=people.ada)
    assert await problem(response) == (403, "admin-only")
    lowered = await api.put("/v1/ladder/ceiling", json={"level": "confirm"}, headers=people.root)
    assert (await lowered.json())["level"] == "confirm"
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert mine["ceiling"] == "confirm"
    other_org = await (await api.get("/v1/ladder", headers=people.eve)).json()
    assert other_org["ceiling"] is None


async def test_an_admin_may_raise_or_lift_the_ceiling_and_lifting_raises_no_one(
    api, people, operator
):
    """Issue 10.10: "a ceiling only lowers" is what it does to a level, not a one-way door."""
    await set_level(api, people.ada, "confirm")
    for level in ("draft", "send", None):
        changed = await api.put("/v1/ladder/ceiling", json={"level": level}, headers=people.root)
        assert (changed.status, (await changed.json())["level"]) == (200, level)
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert (mine["ceiling"], mine["settings"]["default"]) == (None, "confirm")
    assert (await decide(operator, people, "r-00000000000000cc"))["level"] == "confirm"
    records = await audit_records(operator.jetstream(), people.org)
    assert [(r.action, r.data["level"]) for r in records if r.action == "ladder.ceiling.set"] == [
        ("ladder.ceiling.set", "draft"),
        ("ladder.ceiling.set", "send"),
        ("ladder.ceiling.set", None),
    ]


@pytest.mark.parametrize(
    "default, room, ceiling, expected",
    [
        ("send", None, "confirm", "confirm"),
        ("draft", "send", "confirm", "confirm"),
        ("confirm", "send", None, "send"),
        ("send", "draft", None, "draft"),
        ("draft", None, "draft", "draft"),
    ],
)
async def test_the_effective_level_is_the_most_specific_then_the_ceiling(
    api, people, operator, default, room, ceiling, expected
):
    await set_level(api, people.ada, default)
    room_id = (await room_with(api, people, people.bob_id))["id"]
    if room:
        await set_level(api, people.ada, room, "room", room_id)
    if ceiling:
        await api.put("/v1/ladder/ceiling", json={"level": ceiling}, headers=people.root)
    decided = await decide(operator, people, room_id)
    assert decided["level"] == expected
    unset = await set_level(api, people.ada, None, "room", room_id)  # inherits again
    assert room_id not in unset["settings"].get("rooms", {})
