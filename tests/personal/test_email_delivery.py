"""How an email that left by a person's line fares, as Mailgun's events say it. A `failed`
event of severity `temporary` is a soft bounce, which Mailgun tries again: before, it was
taken as final, the person was told their email did not arrive, and Mailgun's `delivered`
that followed was passed over. Opened and clicked were refused 422, which Mailgun retries
for eight hours."""

import pytest

from tests.personal.conftest import history
from tests.personal.test_signature_replay import a_reply_by_email, mailgun_event, signed


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
