"""Issue 10.4: no request and no stored value can break a person's ladder for good."""

import msgspec

from libs.contracts.base import key_token
from tests.personal.conftest import problem, room_with, set_level


async def test_a_room_override_names_a_room_of_the_persons(api, people):
    body = {"level": "confirm", "scope": "room", "target": "not-a-room"}
    malformed = await api.put("/v1/ladder", json=body, headers=people.ada)
    assert (await problem(malformed))[0] == 422
    theirs = await room_with(api, people, people.bob_id)
    elsewhere = await api.post("/v1/rooms", json={"title": "bob's", "members": []},
                               headers=people.bob)  # fmt: skip
    body["target"] = (await elsewhere.json())["id"]
    not_mine = await api.put("/v1/ladder", json=body, headers=people.ada)
    assert await problem(not_mine) == (404, "room-not-found")
    body["target"] = theirs["id"]
    mine = await api.put("/v1/ladder", json=body, headers=people.ada)
    assert mine.status == 200
    assert (await api.get("/v1/ladder", headers=people.ada)).status == 200


async def test_a_transport_override_names_a_transport_of_the_contracts(api, people):
    body = {"level": "confirm", "scope": "transport", "target": "fax"}
    response = await api.put("/v1/ladder", json=body, headers=people.ada)
    assert await problem(response) == (422, "invalid-request")
    assert "sms" in (await response.json(content_type=None))["detail"]


async def test_no_stored_value_can_make_lowering_fail(api, people, connect):
    """Whatever got stored (an older version's shape, a hand edit), reading drops the
    overrides it cannot read and lowering is immediate (hip-0524 §9)."""
    await set_level(api, people.ada, "send")
    stored = {
        "default": "send",
        "transports": {"fax": "send", "sms": "send"},
        "rooms": {"not-a-room": "confirm", "r-00000000000000ab": "loud"},
        "window": "5m",
    }
    async with connect("ladder") as nc:
        kv = await nc.jetstream().key_value("ladder")
        await kv.put(f"settings.{key_token(people.ada_id)}", msgspec.json.encode(stored))
    read = await api.get("/v1/ladder", headers=people.ada)
    assert read.status == 200
    assert (await read.json())["settings"]["transports"] == {"sms": "send"}
    lowered = await set_level(api, people.ada, "draft")
    assert lowered["settings"] == {
        "default": "draft", "transports": {"sms": "send"}, "rooms": {}, "window": "5m"
    }  # fmt: skip
