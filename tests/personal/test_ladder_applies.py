"""Issue 14.3: what applies here. `GET /v1/ladder/effective?room=…&transport=…` answers the
level, the window and which setting decided it: the default, the transport's override, the
room's, or the org's ceiling."""

from libs.contracts.ladder import SEND_MEANS
from tests.personal.conftest import room_with


async def applies(api, headers, **query) -> tuple[int, dict]:
    r = await api.get("/v1/ladder/effective", params=query, headers=headers)
    return r.status, await r.json()


async def test_the_setting_that_decides_the_level_is_named(api, people):
    room = await room_with(api, people, people.bob_id)
    assert await applies(api, people.ada, room=room["id"], transport="sms") == (
        200,
        {"level": "draft", "window": "5m", "decided_by": "default"},
    )
    send = {"level": "send", "scope": "transport", "target": "sms", "acknowledge": SEND_MEANS}
    assert (await api.put("/v1/ladder", json=send, headers=people.ada)).status == 200
    _, now = await applies(api, people.ada, room=room["id"], transport="sms")
    assert (now["level"], now["decided_by"]) == ("send", "transport")
    mine = {"level": "confirm", "scope": "room", "target": room["id"]}
    assert (await api.put("/v1/ladder", json=mine, headers=people.ada)).status == 200
    _, now = await applies(api, people.ada, room=room["id"], transport="sms")
    assert (now["level"], now["decided_by"]) == ("confirm", "room")
    lowered = await api.put("/v1/ladder/ceiling", json={"level": "draft"}, headers=people.root)
    assert lowered.status == 200
    _, now = await applies(api, people.ada, room=room["id"], transport="sms")
    assert (now["level"], now["decided_by"]) == ("draft", "ceiling")


async def test_a_room_that_is_not_mine_is_not_found(api, people):
    room = await room_with(api, people, people.bob_id)
    status, body = await applies(api, people.eve, room=room["id"])
    assert status == 404 and body["type"].endswith("room-not-found")
    status, body = await applies(api, people.ada, transport="pigeon")
    assert status == 422
