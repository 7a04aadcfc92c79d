"""WhatsApp takes a free-form message only within 24 hours of the correspondent's last
(Meta's customer service window). Before, a person's reply a day later was stored as said
and handed over, and Meta failed it (131047, "Re-engagement message"). Now it is refused
before anything is stored, and the correspondent writing again opens the window."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.personal.conftest import history, problem
from tests.personal.test_delivery import _meta
from tests.personal.test_hip0524_09_personal_line import connect

SECRET = "meta-app-secret-of-ada"


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_reply_past_the_service_window_is_refused_until_they_write(api, people, operator):
    line = await connect(api, operator, people, transport="whatsapp", credential=SECRET)

    async def they_write(id_: str, text: str) -> dict:
        value = {"messaging_product": "whatsapp",
                 "metadata": {"display_phone_number": line["address"].lstrip("+")},
                 "messages": [{"from": "447700900123", "id": id_, "type": "text",
                               "text": {"body": text}}]}  # fmt: skip
        landed = await _meta(api, "/v1/lines/whatsapp/inbound", SECRET,
                             {"entry": [{"changes": [{"value": value}]}]})  # fmt: skip
        assert landed.status == 200, await landed.text()
        return await landed.json()

    room = {"id": (await they_write("wamid.w1", "Is it free?"))["room"]}
    path = f"/v1/rooms/{room['id']}/messages"
    assert (await api.post(path, json={"text": "It is."}, headers=people.ada)).status == 201

    # A day and an hour on: they last wrote 25 hours ago.
    rooms_kv = await operator.jetstream().key_value("rooms")
    long_ago = datetime.now(UTC) - timedelta(hours=25)
    await rooms_kv.put(f"heard.{room['id']}", long_ago.isoformat().encode())
    late = await api.post(path, json={"text": "Still free!"}, headers=people.ada)
    assert await problem(late) == (409, "outside-service-window")
    assert "Still free!" not in [m["text"] for m in await history(api, room, people.ada)]

    await they_write("wamid.w2", "Can I still see it?")
    again = await api.post(path, json={"text": "Still free!"}, headers=people.ada)
    assert again.status == 201, await again.text()
