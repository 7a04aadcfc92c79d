"""Issue 14.5: a message that left by a line carries its transport, the carrier's id for it
and a status, moved forward by the carrier's signed status callback; visible in history
and the room's stream; a failed delivery waits on its person in their pending list.
Through the gateway, on the running services."""

import asyncio
import contextlib
import json
from urllib.parse import urlencode

import pytest
from playwright.async_api import expect

from services.rooms.domain.lines import sign_meta, sign_twilio
from tests.personal.conftest import announce, drafts, eventually, history, problem
from tests.personal.test_hip0524_09_personal_line import TOKEN, connect, sms
from tests.personal.test_pending import pending
from tests.support import browser_page, token

CORRESPONDENT = "+14155550100"


@pytest.fixture
def api(whole_api):
    return whole_api


async def status(api, line: dict, sid: str, state: str, *, token: str = TOKEN, **extra: str):
    """Twilio's status callback for message `sid` sent from `line`."""
    path = "/v1/lines/sms/status"
    fields = {"MessageSid": sid, "MessageStatus": state, "From": line["address"],
              "To": CORRESPONDENT, **extra}  # fmt: skip
    signature = sign_twilio(token, str(api.make_url(path)), list(fields.items()))
    return await api.post(path, data=urlencode(fields), headers={
        "Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": signature,
    })  # fmt: skip


async def _sent_by_line(api, operator, people) -> tuple[dict, dict, dict]:
    """Ada's reply to a text, sent from her draft: (line, room, the message as sent)."""
    await announce(operator, people.ada_id)
    line = await connect(api, operator, people)
    arrived = await (await sms(api, line, CORRESPONDENT, "Still available?")).json()
    room = {"id": arrived["room"]}
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}/send"
    response = await api.post(path, json={}, headers=people.ada)
    assert response.status == 201, await response.text()
    return line, room, await response.json()


async def _delivery(api, people, room: dict, seq: int) -> dict | None:
    found = [m for m in await history(api, room, people.ada) if m["seq"] == seq]
    return found[0].get("delivery") if found else None


async def test_a_message_that_left_carries_its_carrier_id_and_status_moved_by_the_carrier(
    api, operator, people
):
    line, room, sent = await _sent_by_line(api, operator, people)
    delivery = sent["delivery"]
    assert (delivery["transport"], delivery["status"]) == ("sms", "queued")
    assert delivery["carrier_id"] and await _delivery(api, people, room, sent["seq"]) == delivery
    # Only messages that left carry one: the text that arrived does not.
    assert [m.get("delivery") is None for m in await history(api, room, people.ada)] == [
        True, False
    ]  # fmt: skip

    events: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()

    async def listen() -> None:
        response = await api.get(f"/v1/rooms/{room['id']}/messages/stream", headers=people.ada)
        event = None
        async for raw in response.content:
            line_ = raw.decode().rstrip("\n")
            if line_.startswith("event: "):
                event = line_.removeprefix("event: ")
            elif line_.startswith("data: ") and event is not None:
                await events.put((event, json.loads(line_.removeprefix("data: "))))

    task = asyncio.create_task(listen())
    try:
        # The history comes after the stream subscribed: once it is read, nothing is missed.
        for _ in range(2):
            assert (await asyncio.wait_for(events.get(), 10))[0] == "message"
        for state in ("sent", "delivered"):
            answered = await status(api, line, delivery["carrier_id"], state)
            assert answered.status == 200, await answered.text()
            event, heard = await asyncio.wait_for(events.get(), 10)
            assert event == "delivery"
            assert (heard["seq"], heard["delivery"]["status"]) == (sent["seq"], state)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # A late "sent" after "delivered" changes nothing: statuses only move forward.
    late = await status(api, line, delivery["carrier_id"], "sent")
    assert (await late.json())["status"] == "delivered"
    assert (await _delivery(api, people, room, sent["seq"]))["status"] == "delivered"


async def test_a_failed_delivery_waits_on_its_person_until_dismissed(api, operator, people):
    line, room, sent = await _sent_by_line(api, operator, people)
    base = f"/v1/rooms/{room['id']}/messages"
    # Before it failed there is nothing to dismiss: a conflict, the message being there;
    # a message that is not is not found.
    early = await api.post(f"{base}/{sent['seq']}/dismiss", json={}, headers=people.ada)
    assert await problem(early) == (409, "not-failed")
    none = await api.post(f"{base}/{sent['seq'] + 99}/dismiss", json={}, headers=people.ada)
    assert await problem(none) == (404, "message-not-found")
    carrier_id = sent["delivery"]["carrier_id"]
    failed = await status(api, line, carrier_id, "undelivered", ErrorCode="30003")
    assert (await failed.json())["status"] == "failed"
    delivery = await _delivery(api, people, room, sent["seq"])
    assert (delivery["status"], delivery["error"]) == ("failed", "error 30003")

    (item,) = await pending(api, people.ada)
    assert (item["kind"], item["room"], item["text"]) == ("delivery", room["id"], sent["text"])
    assert item["detail"]["carrier_id"] == carrier_id
    for other in (people.bob, people.root, people.eve):
        assert await pending(api, other) == []
    (dismiss,) = item["actions"]
    done = await api.post(dismiss["path"], json=dismiss["body"], headers=people.ada)
    assert done.status == 200, await done.text()
    assert await pending(api, people.ada) == []
    again = await api.post(dismiss["path"], json=dismiss["body"], headers=people.ada)
    assert await problem(again) == (409, "not-failed")
    # Dismissed is not undone: the message still says it failed.
    assert (await _delivery(api, people, room, sent["seq"]))["status"] == "failed"


async def test_a_status_callback_not_signed_by_the_line_or_not_its_message_changes_nothing(
    api, operator, people
):
    line, room, sent = await _sent_by_line(api, operator, people)
    carrier_id = sent["delivery"]["carrier_id"]
    forged = await status(api, line, carrier_id, "failed", token="not-the-line-s-token")
    assert forged.status == 403
    unknown = await status(api, line, "SM" + "0" * 32, "delivered")
    assert unknown.status == 404
    assert (await _delivery(api, people, room, sent["seq"]))["status"] == "queued"


async def test_a_whatsapp_status_in_meta_s_style(api, operator, people):
    await announce(operator, people.ada_id)
    secret = "meta-app-secret-of-ada"
    line = await connect(api, operator, people, transport="whatsapp", credential=secret)
    body = {"entry": [{"changes": [{"value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": line["address"].lstrip("+")},
        "messages": [{"from": CORRESPONDENT.lstrip("+"), "id": "wamid.in1",
                      "text": {"body": "Hello?"}}],
    }}]}]}  # fmt: skip
    arrived = await _meta(api, "/v1/lines/whatsapp/inbound", secret, body)
    room = {"id": (await arrived.json())["room"]}
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}/send"
    out = await (await api.post(path, json={}, headers=people.ada)).json()
    update = {"entry": [{"changes": [{"value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": line["address"].lstrip("+")},
        "statuses": [{"id": out["delivery"]["carrier_id"], "status": "failed",
                      "errors": [{"title": "Re-engagement message"}]}],
    }}]}]}  # fmt: skip
    told = await _meta(api, "/v1/lines/whatsapp/status", secret, update)
    assert told.status == 200, await told.text()
    delivery = await _delivery(api, people, room, out["seq"])
    assert (delivery["status"], delivery["error"]) == ("failed", "Re-engagement message")


async def _meta(api, path: str, secret: str, body: dict):
    raw = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign_meta(secret, raw)}
    return await api.post(path, data=raw, headers=headers)


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console"))) as page:
        yield page


async def test_the_console_shows_what_left_by_my_line_and_how_it_fares(api, operator, people, page):
    await page.fill("#token", token(org=people.org, user=people.ada_id))
    await page.click("#use")
    await expect(page.locator("#none-sent")).to_be_visible()
    line, room, sent = await _sent_by_line(api, operator, people)
    mine = page.locator(f"#sent li[data-room={room['id']}][data-seq='{sent['seq']}']")
    await expect(mine).to_have_attribute("data-status", "queued", timeout=10_000)
    await expect(mine).to_contain_text("handed to the carrier")
    await status(api, line, sent["delivery"]["carrier_id"], "delivered")
    await expect(mine).to_have_attribute("data-status", "delivered", timeout=10_000)
    await expect(mine).to_contain_text(f'"{sent["text"]}": delivered')
