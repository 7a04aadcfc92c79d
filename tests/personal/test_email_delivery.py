"""How an email that left by a person's line fares, as Mailgun's events say it. A `failed`
event of severity `temporary` is a soft bounce, which Mailgun tries again: before, it was
taken as final, the person was told their email did not arrive, and Mailgun's `delivered`
that followed was passed over. Opened and clicked were refused 422, which Mailgun retries
for eight hours."""

import secrets
from urllib.parse import urlencode

import pytest

from tests.personal.conftest import history, problem
from tests.personal.test_signature_replay import FORM, a_reply_by_email, mailgun_event, signed


@pytest.fixture
def api(whole_api):
    return whole_api


async def test_a_soft_bounce_is_not_a_failure_and_delivered_follows(api, people, operator):
    line, _, room, reply = await a_reply_by_email(api, operator, people)

    async def told(event: str, **more: object) -> dict:
        body = mailgun_event(line, reply, event, signed(), **more)
        response = await api.post(
            "/v1/lines/email/status", data=body, headers={"Content-Type": "application/json"}
        )
        assert response.status == 200, await response.text()
        return await response.json()

    async def pending() -> list[dict]:
        found = await (await api.get("/v1/pending", headers=people.ada)).json()
        return [i for i in found["items"] if i["kind"] == "delivery"]

    soft = {"severity": "temporary", "delivery-status": {"message": "4.2.2 Mailbox full"}}
    assert (await told("failed", **soft))["status"] == "queued"
    assert await pending() == []
    assert (await told("delivered"))["status"] == "delivered"
    assert (await told("opened"))["status"] == "delivered"
    [left] = [m for m in await history(api, room, people.ada) if m["seq"] == reply["seq"]]
    assert left["delivery"]["status"] == "delivered"
    assert await pending() == []


async def test_a_complaint_stops_what_leaves_until_they_write_again(api, people, operator):
    """Marking Ada's email as spam (or unsubscribing) opts its recipient out, as a STOP does
    by text: Mailgun suppresses every email to them after. Before, Ada's next email was
    stored as said and handed to a carrier that drops it."""
    line, inbound, room, reply = await a_reply_by_email(api, operator, people)
    body = mailgun_event(line, reply, "complained", signed())
    told = await api.post(
        "/v1/lines/email/status", data=body, headers={"Content-Type": "application/json"}
    )
    assert told.status == 200, await told.text()
    path = f"/v1/rooms/{room['id']}/messages"
    refused = await api.post(path, json={"text": "Following up."}, headers=people.ada)
    assert await problem(refused) == (409, "opted-out")
    assert "Following up." not in [m["text"] for m in await history(api, room, people.ada)]

    again = {**inbound, **signed(), "body-plain": "Sorry, wrong button.",
             "Message-Id": f"<{secrets.token_hex(6)}@example.org>"}  # fmt: skip
    wrote = await api.post("/v1/lines/email/inbound", data=urlencode(again), headers=FORM)
    assert wrote.status == 200, await wrote.text()
    posted = await api.post(path, json={"text": "Following up."}, headers=people.ada)
    assert posted.status == 201, await posted.text()
