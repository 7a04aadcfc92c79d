"""A carrier's signature carries only what it came with. Mailgun signs a token and a
timestamp and none of the content, so its guide says to take each token once. Before, a
signature seen once (in a proxy's log, say) carried any email or delivery status to a
person's line for as long as its timestamp was fresh: five minutes."""

import json
import secrets
import time
from urllib.parse import urlencode

import pytest

from services.rooms.domain.lines import sign_mailgun
from tests.personal.conftest import history, problem
from tests.personal.test_hip0524_09_personal_line import connect

KEY = "mailgun-signing-key"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def api(whole_api):
    return whole_api


def signed() -> dict[str, str]:
    stamp, token = str(int(time.time())), secrets.token_hex(25)
    return {"timestamp": stamp, "token": token, "signature": sign_mailgun(KEY, stamp, token)}


async def email_line(api, operator, people) -> dict:
    address = f"ada.{secrets.token_hex(4)}@example.com"
    return await connect(api, operator, people, "email", address, KEY)


async def test_a_signature_seen_once_carries_no_other_email(api, people, operator):
    line = await email_line(api, operator, people)
    real = {"sender": "landlord@example.org", "recipient": line["address"], "subject": "Rent",
            "body-plain": "Due on the 1st.", "Message-Id": "<m1@example.org>",
            **signed()}  # fmt: skip
    first = await api.post("/v1/lines/email/inbound", data=urlencode(real), headers=FORM)
    assert first.status == 200, await first.text()
    delivered = await first.json()
    # Mailgun asking again, as it does when an answer is lost: the same email, stored once.
    again = await api.post("/v1/lines/email/inbound", data=urlencode(real), headers=FORM)
    assert again.status == 200, await again.text()
    assert (await again.json())["seq"] == delivered["seq"]

    forged = {**real, "sender": "security@bank.example", "subject": "Urgent",
              "body-plain": "Reply with your card number.",
              "Message-Id": "<m2@bank.example>"}  # fmt: skip
    refused = await api.post("/v1/lines/email/inbound", data=urlencode(forged), headers=FORM)
    assert await problem(refused) == (406, "signature-replayed")
    listed = (await (await api.get("/v1/rooms", headers=people.ada)).json())["rooms"]
    assert "security@bank.example" not in {r.get("correspondent") for r in listed}
    assert [m["text"] for m in await history(api, {"id": delivered["room"]}, people.ada)] == [
        "Rent\n\nDue on the 1st."
    ]


async def a_reply_by_email(api, operator, people) -> tuple[dict, dict, dict, dict]:
    """Ada's email line, an email that came by it (its signed fields), its room, and her
    reply there, which left by the line."""
    line = await email_line(api, operator, people)
    inbound = {"sender": "landlord@example.org", "recipient": line["address"],
               "body-plain": "Is the flat still free?",
               "Message-Id": f"<{secrets.token_hex(6)}@example.org>", **signed()}  # fmt: skip
    arrived = await api.post("/v1/lines/email/inbound", data=urlencode(inbound), headers=FORM)
    assert arrived.status == 200, await arrived.text()
    room = {"id": (await arrived.json())["room"]}
    posted = await api.post(
        f"/v1/rooms/{room['id']}/messages", json={"text": "It is."}, headers=people.ada
    )
    assert posted.status == 201, await posted.text()
    return line, inbound, room, await posted.json()


def mailgun_event(line: dict, reply: dict, name: str, signature: dict, **more: object) -> str:
    """Mailgun's event for Ada's `reply`, signed with `signature`."""
    data = {"event": name, "envelope": {"sender": line["address"]},
            "message": {"headers": {"message-id": reply["delivery"]["carrier_id"]}},
            **more}  # fmt: skip
    return json.dumps({"signature": signature, "event-data": data})


async def test_a_signature_seen_once_fails_no_delivery(api, people, operator):
    """The inbound email's signature, carried onto a status callback saying Ada's reply
    failed: before, her reply read `failed` and waited on her as failed."""
    line, inbound, room, reply = await a_reply_by_email(api, operator, people)

    def event(name: str, signature: dict[str, str]) -> str:
        return mailgun_event(line, reply, name, signature)

    replayed = {k: inbound[k] for k in ("timestamp", "token", "signature")}
    refused = await api.post(
        "/v1/lines/email/status",
        data=event("failed", replayed),
        headers={"Content-Type": "application/json"},
    )
    assert await problem(refused) == (406, "signature-replayed")

    async def status() -> str:
        [found] = [m for m in await history(api, room, people.ada) if m["seq"] == reply["seq"]]
        return found["delivery"]["status"]

    assert await status() == "queued"
    pending = await (await api.get("/v1/pending", headers=people.ada)).json()
    assert not [i for i in pending["items"] if i["kind"] == "delivery"]
    # Mailgun's own callback, signed anew, moves it.
    told = await api.post(
        "/v1/lines/email/status",
        data=event("delivered", signed()),
        headers={"Content-Type": "application/json"},
    )
    assert told.status == 200, await told.text()
    assert await status() == "delivered"


async def test_a_timestamp_that_is_no_number_is_unverified_never_a_500(api, people, operator):
    """Before, "²" (a digit to `str.isdigit`, none to `int`) was a 500 on both Mailgun
    routes, for anyone who posted it."""
    line = await email_line(api, operator, people)
    forged = {"sender": "x@example.org", "recipient": line["address"], "body-plain": "hi",
              "Message-Id": "<m5@example.org>", "timestamp": "²", "token": "t",
              "signature": "s"}  # fmt: skip
    refused = await api.post("/v1/lines/email/inbound", data=urlencode(forged), headers=FORM)
    assert await problem(refused) == (406, "webhook-unverified")
    data = {"event": "delivered", "envelope": {"sender": line["address"]},
            "message": {"headers": {"message-id": "m"}}}  # fmt: skip
    event = json.dumps({"signature": {"timestamp": "²", "token": "t", "signature": "s"},
                        "event-data": data})  # fmt: skip
    refused = await api.post(
        "/v1/lines/email/status", data=event, headers={"Content-Type": "application/json"}
    )
    assert await problem(refused) == (406, "webhook-unverified")
