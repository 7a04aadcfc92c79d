"""Mailgun asks again for eight hours after any answer but a 200 and a 406. Before, every
refusal of an email (its line gone, its signature forged, its body too large) was a 403, a
413 or a 422, so Mailgun posted each one seven more times, each refused again."""

import json
from urllib.parse import urlencode

import msgspec
import pytest

from libs.contracts.problem import Refused
from services.gateway.webhooks import _refused
from tests.personal.conftest import problem
from tests.personal.test_signature_replay import FORM, email_line, signed


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_an_email_refused_for_good_is_answered_406_naming_its_rule(api, people, operator):
    line = await email_line(api, operator, people)
    fields = {"sender": "landlord@example.org", "recipient": line["address"],
              "body-plain": "Rent", "Message-Id": "<r1@example.org>"}  # fmt: skip
    forged = await api.post(
        "/v1/lines/email/inbound",
        data=urlencode({**fields, **signed(), "signature": "0" * 64}),
        headers=FORM,
    )
    assert await problem(forged) == (406, "webhook-unverified")
    large = {**fields, **signed(), "body-plain": "x" * (1024 * 1024)}
    too_large = await api.post("/v1/lines/email/inbound", data=urlencode(large), headers=FORM)
    assert await problem(too_large) == (406, "body-too-large")
    data = {"event": "delivered", "envelope": {"sender": line["address"]},
            "message": {"headers": {"message-id": "m"}}}  # fmt: skip
    status = json.dumps({"signature": {**signed(), "signature": "0" * 64}, "event-data": data})
    refused = await api.post(
        "/v1/lines/email/status", data=status, headers={"Content-Type": "application/json"}
    )
    assert await problem(refused) == (406, "webhook-unverified")
    landed = await api.post(
        "/v1/lines/email/inbound", data=urlencode(fields | signed()), headers=FORM
    )
    assert landed.status == 200, await landed.text()  # the line takes what is signed


@pytest.mark.parametrize(
    ("transport", "status", "answered"),
    [
        ("email", 403, 406),
        ("email", 422, 406),
        ("email", 429, 429),  # a limit passes: asked again, it may land
        ("email", 503, 503),  # transient: Mailgun's asking again is what brings it
        ("sms", 403, 403),  # Twilio asks once, whatever it is answered
        ("whatsapp", 422, 422),
    ],
)
def test_only_mailgun_s_final_refusals_become_406(transport, status, answered):
    response = _refused(transport, Refused("some-rule", status, "why").problem)
    body = msgspec.json.decode(response.body)
    assert (response.status, body["status"], body["type"]) == (
        answered,
        answered,
        "urn:tether:problem:some-rule",
    )
