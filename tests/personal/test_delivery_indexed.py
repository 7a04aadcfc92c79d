"""A message that left by a line is found again by the carrier's id for it, so the
carrier's word on it (sent, delivered, failed) moves its delivery. The try that stored
the delivery could stop before that index was written (its replica's network failed
there); asked again, it found the delivery stored and left it so, and every word the
carrier said of that message after was dropped: a text that failed never waited on its
person. Now the repeat indexes it again, and the index's write is asked again when its
answer does not come.

The break is made by a TCP proxy between the rooms replica and its server (`Link`), which
drops the index's write and cuts every connection through it for a second."""

import pytest

from tests.personal.conftest import announce, drafts, eventually, history
from tests.personal.test_delivery import CORRESPONDENT, status
from tests.personal.test_hip0524_09_personal_line import connect, sms
from tests.personal.test_pending import pending

CARRIER_INDEX = b"PUB $KV.rooms.carrier."


async def problem_rule(response) -> str | None:
    if response.status < 400:
        return None
    return (await response.json())["type"].removeprefix("urn:tether:problem:")


@pytest.fixture
def rooms_service(linked_rooms):
    return linked_rooms


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_delivery_whose_index_write_was_lost_still_hears_the_carrier(
    api, rooms_service, operator, people
):
    link = rooms_service
    await announce(operator, people.ada_id)
    line = await connect(api, operator, people)
    arrived = await (await sms(api, line, CORRESPONDENT, "Still available?")).json()
    room = {"id": arrived["room"]}
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    link.cut_at(CARRIER_INDEX, 1.0)

    async def sent() -> dict | None:
        """Sent from the draft, asked again under its key after a transient failure, as a
        client does."""
        path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}/send"
        keyed = {**people.ada, "Idempotency-Key": f"send-{draft['id']}"}
        response = await api.post(path, json={}, headers=keyed)
        if response.status >= 500 or await problem_rule(response) == "idempotency-key-in-use":
            return None
        assert response.status == 201, await response.text()
        return await response.json()

    message = await eventually(sent, timeout=60)
    carrier_id = message["delivery"]["carrier_id"]
    told = await status(api, line, carrier_id, "failed", ErrorCode="30006")
    assert told.status == 200, await told.text()
    [found] = [m for m in await history(api, room, people.ada) if m["seq"] == message["seq"]]
    assert found["delivery"]["status"] == "failed"
    (item,) = await pending(api, people.ada)
    assert (item["kind"], item["room"], item["detail"]["carrier_id"]) == (
        "delivery",
        room["id"],
        carrier_id,
    )
