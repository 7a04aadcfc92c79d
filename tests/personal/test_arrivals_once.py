"""What a carrier sends is stored once per line, however late it sends it again.

One email to two people (To Ada, Cc Bob) comes by Mailgun once for each line, with the one
Message-Id. Before, the second was taken for the first sent again: refused 422, which
Mailgun retries for 8 hours and then drops. And a carrier's retry was recognised for the
history stream's duplicate window, an hour: Mailgun retries for 8 hours and Meta for 7
days, so a text whose answer was lost in an outage of more than an hour landed twice, and
its person's agent answered it twice."""

import secrets
import time
from urllib.parse import urlencode

import pytest

from services.rooms.domain.lines import sign_mailgun
from tests.personal.conftest import an_hour_on, history
from tests.personal.test_hip0524_09_personal_line import code_sent, connect, sms

KEY = "mailgun-signing-key"
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


@pytest.fixture
def api(whole_api):
    return whole_api


async def _email_line(api, operator, people, who: dict) -> dict:
    address = f"{secrets.token_hex(4)}@example.com"
    body = {"transport": "email", "address": address, "credential": KEY}
    assert (await api.post("/v1/lines", json=body, headers=who)).status == 201
    code = await code_sent(operator, "email", people.org, address)
    proven = await api.post("/v1/lines/email/verify", json={"code": code}, headers=who)
    assert proven.status == 200, await proven.text()
    return await proven.json()


async def test_one_email_to_two_people_lands_for_each(api, people, operator):
    ada = await _email_line(api, operator, people, people.ada)
    bob = await _email_line(api, operator, people, people.bob)
    message_id = f"<{secrets.token_hex(6)}@agency.example>"
    for line, who in ((ada, people.ada), (bob, people.bob)):
        stamp, token = str(int(time.time())), secrets.token_hex(25)
        fields = {"sender": "rent@agency.example", "recipient": line["address"],
                  "subject": "Rent", "body-plain": "Due on the 1st.", "Message-Id": message_id,
                  "timestamp": stamp, "token": token,
                  "signature": sign_mailgun(KEY, stamp, token)}  # fmt: skip
        landed = await api.post("/v1/lines/email/inbound", data=urlencode(fields), headers=FORM)
        assert landed.status == 200, await landed.text()
        room = {"id": (await landed.json())["room"]}
        assert [m["text"] for m in await history(api, room, who)] == ["Rent\n\nDue on the 1st."]


async def test_a_carriers_retry_past_the_streams_window_is_stored_once(api, people, operator):
    line = await connect(api, operator, people)
    sid = f"SM{secrets.token_hex(16)}"
    first = await (await sms(api, line, "+14155550100", "Still available?", sid=sid)).json()
    async with an_hour_on(operator.jetstream()):
        retried = await sms(api, line, "+14155550100", "Still available?", sid=sid)
        assert retried.status == 200, await retried.text()
        assert (await retried.json())["seq"] == first["seq"]
    texts = [m["text"] for m in await history(api, {"id": first["room"]}, people.ada)]
    assert texts == ["Still available?"]
