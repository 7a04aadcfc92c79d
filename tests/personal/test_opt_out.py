"""A correspondent who texts STOP has opted out of what a person's line sends them; the
carrier (Twilio, by its default keywords) sends them nothing more. Before, the person's
agent drafted a chatty answer to the STOP, and what the person or their agent sent next
was stored as said and handed to a carrier that would refuse it. Now the STOP lands with
no answer, nothing leaves by the line to them, and START opens it again."""

import pytest

from tests.personal.conftest import announce, drafts, eventually, history, problem
from tests.personal.test_hip0524_09_personal_line import connect, sms

ALICE = "+14155550100"


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_stop_is_not_answered_and_nothing_leaves_until_start(api, people, operator, acks):
    await announce(operator, people.ada_id)
    line = await connect(api, operator, people)
    first = await (await sms(api, line, ALICE, "Is the flat still available?")).json()
    room = {"id": first["room"]}
    [draft] = await eventually(lambda: drafts(api, room, people.ada))

    stop = await sms(api, line, ALICE, "Stop")
    assert stop.status == 200, await stop.text()
    await acks.caught_up("EVENTS", "agents")
    assert [d["id"] for d in await drafts(api, room, people.ada)] == [draft["id"]]

    path = f"/v1/rooms/{room['id']}/messages"
    posted = await api.post(path, json={"text": "Yes, it is."}, headers=people.ada)
    assert await problem(posted) == (409, "opted-out")
    sent = await api.post(
        f"/v1/rooms/{room['id']}/drafts/{draft['id']}/send", json={}, headers=people.ada
    )
    assert await problem(sent) == (409, "opted-out")
    assert [m["text"] for m in await history(api, room, people.ada)] == [
        "Is the flat still available?", "Stop"
    ]  # fmt: skip

    # Twilio's Advanced Opt-Out names it: START opens the line to them again.
    again = await sms(api, line, ALICE, "ok, start again", OptOutType="START")
    assert again.status == 200, await again.text()
    posted = await api.post(path, json={"text": "Yes, it is."}, headers=people.ada)
    assert posted.status == 201, await posted.text()
    assert (await posted.json())["delivery"]["status"] == "queued"
