"""Issue 14.5: a message that left by a line carries its transport, the carrier's id for it
and a status, moved forward by the carrier's signed status callback; visible in history
and the room's stream; a failed delivery waits on its person in their pending list.
Through the gateway, on the running services."""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import pytest
from playwright.async_api import expect

from libs.contracts.rooms import delivery_subject
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

    async with _stream(api, people, room) as events:
        # The history comes after the stream subscribed: once it is read, nothing is missed.
        for _ in range(2):
            assert (await asyncio.wait_for(events.get(), 10))[0] == "message"
        for state in ("sent", "delivered"):
            answered = await status(api, line, delivery["carrier_id"], state)
            assert answered.status == 200, await answered.text()
            event, heard = await asyncio.wait_for(events.get(), 10)
            assert event == "delivery"
            assert (heard["seq"], heard["delivery"]["status"]) == (sent["seq"], state)
    # A late "sent" after "delivered" changes nothing: statuses only move forward.
    late = await status(api, line, delivery["carrier_id"], "sent")
    assert (await late.json())["status"] == "delivered"
    assert (await _delivery(api, people, room, sent["seq"]))["status"] == "delivered"


async def test_a_move_heard_after_a_later_one_never_sets_the_streams_delivery_back(
    api, operator, people
):
    """Two rooms replicas, each handling one of a message's status callbacks, may publish
    the moves out of their order: "sent" heard after "delivered" was sent on as it came,
    and the client was left showing the message sent, not delivered."""
    line, room, sent = await _sent_by_line(api, operator, people)
    delivery = sent["delivery"]
    async with _stream(api, people, room) as events:
        for _ in range(2):
            assert (await asyncio.wait_for(events.get(), 10))[0] == "message"
        for state in ("sent", "delivered"):
            assert (await status(api, line, delivery["carrier_id"], state)).status == 200
        late = {"seq": sent["seq"], "delivery": delivery | {"status": "sent"}}
        await operator.publish(delivery_subject(room["id"]), json.dumps(late).encode())
        heard = [await asyncio.wait_for(events.get(), 10) for _ in range(3)]
    assert {event for event, _ in heard} == {"delivery"}
    assert heard[-1][1]["delivery"]["status"] == "delivered"


@contextlib.asynccontextmanager
async def _stream(api, people, room: dict) -> AsyncIterator[asyncio.Queue[tuple[str, dict]]]:
    """Ada's stream of the room, its events as (event, data) in a queue."""
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
        yield events
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


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


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({}, "only part of it arrived"),
        ({"ErrorCode": "30008"}, "only part of it arrived (error 30008)"),
    ],
)
async def test_a_text_only_partly_delivered_waits_on_its_person_as_failed(
    api, operator, people, extra, error
):
    """Twilio's `partially_delivered` (a message sent in parts, not all of which arrived)
    is final: the text did not arrive as written, and its person is told so."""
    line, room, sent = await _sent_by_line(api, operator, people)
    carrier_id = sent["delivery"]["carrier_id"]
    reported = await status(api, line, carrier_id, "partially_delivered", **extra)
    assert reported.status == 200, await reported.text()
    delivery = await _delivery(api, people, room, sent["seq"])
    assert (delivery["status"], delivery["error"]) == ("failed", error)
    (item,) = await pending(api, people.ada)
    assert (item["kind"], item["room"], item["text"]) == ("delivery", room["id"], sent["text"])
    later = await status(api, line, carrier_id, "delivered")
    assert (await later.json())["status"] == "failed"


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
    # Its fare read again every two seconds: the room was read whole from its first
    # message each time. Once delivered (the carrier's last word), from the last one read.
    lines_read: list[str] = []
    of_room = f"/v1/rooms/{room['id']}/messages?after="
    page.on("request", lambda r: lines_read.append(r.url) if of_room in r.url else None)
    await status(api, line, sent["delivery"]["carrier_id"], "delivered")
    await expect(mine).to_have_attribute("data-status", "delivered", timeout=10_000)
    await expect(mine).to_contain_text(f'"{sent["text"]}": delivered')
    since = len(lines_read)

    async def read_on() -> list[str]:
        return [url for url in lines_read[since:] if url.endswith("&limit=200")]

    assert all(f"{of_room}0&" not in url for url in await eventually(read_on)), lines_read


async def test_a_draft_answering_a_text_names_its_sender_by_number(api, operator, people, page):
    await announce(operator, people.ada_id)
    line = await connect(api, operator, people)
    await page.fill("#token", token(org=people.org, user=people.ada_id))
    await page.click("#use")
    await sms(api, line, CORRESPONDENT, "Still available?")
    draft = page.locator("#pending > li[data-kind=draft]")
    await expect(draft.locator(".answers")).to_have_text(
        f"Answers {CORRESPONDENT}: “Still available?”", timeout=10_000
    )


async def test_meta_batches_messages_and_statuses_to_one_address_and_none_is_lost(
    api, operator, people
):
    """Meta sends a number's messages and its statuses to the one callback URL, batched
    (each entry's changes, each change's messages), and statuses alone. Before, only the
    first message of a batch was read (the rest lost), and a body of statuses was refused
    422, which Meta asks again for days and then stops sending anything."""
    await announce(operator, people.ada_id)
    secret = "meta-app-secret-of-ada"
    line = await connect(api, operator, people, transport="whatsapp", credential=secret)
    number = line["address"].lstrip("+")

    def value(**items) -> dict:
        return {"messaging_product": "whatsapp",
                "metadata": {"display_phone_number": number}, **items}  # fmt: skip

    def text(sender: str, id_: str, body: str) -> dict:
        return {"from": sender, "id": id_, "type": "text", "text": {"body": body}}

    first = await _meta(api, "/v1/lines/whatsapp/inbound", secret, {"entry": [{"changes": [
        {"value": value(messages=[text("447700900123", "wamid.a1", "Hello?")])},
    ]}]})  # fmt: skip
    room = {"id": (await first.json())["room"]}
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    path = f"/v1/rooms/{room['id']}/drafts/{draft['id']}/send"
    out = await (await api.post(path, json={}, headers=people.ada)).json()

    batch = {"entry": [
        {"changes": [{"value": value(messages=[
            text("447700900123", "wamid.a2", "Are you there?"),
            text("447700900999", "wamid.b1", "New here"),
        ])}]},
        {"changes": [{"value": value(statuses=[
            {"id": out["delivery"]["carrier_id"], "status": "delivered"},
            {"id": "wamid.not-ours", "status": "read"},
        ])}]},
    ]}  # fmt: skip
    answered = await _meta(api, "/v1/lines/whatsapp/inbound", secret, batch)
    assert answered.status == 200, await answered.text()
    assert ((await answered.json())["messages"], (await answered.json())["statuses"]) == (2, 1)
    assert [m["text"] for m in await history(api, room, people.ada)] == [
        "Hello?", draft["text"], "Are you there?"
    ]  # fmt: skip
    assert (await _delivery(api, people, room, out["seq"]))["status"] == "delivered"
    rooms_now = (await (await api.get("/v1/rooms", headers=people.ada)).json())["rooms"]
    assert "+447700900999" in {r.get("correspondent") for r in rooms_now}

    # A status Meta adds after this was written is passed over; its batch's message lands.
    # Before, the batch was refused 422 whole, and its message never landed.
    unknown = {"entry": [{"changes": [{"value": value(
        messages=[text("447700900123", "wamid.a4", "Still there?")],
        statuses=[{"id": out["delivery"]["carrier_id"], "status": "warning"}],
    )}]}]}  # fmt: skip
    passed = await _meta(api, "/v1/lines/whatsapp/inbound", secret, unknown)
    assert passed.status == 200, await passed.text()
    assert ((await passed.json())["messages"], (await passed.json())["statuses"]) == (1, 0)
    # So is a status alone of that kind, and another field the app subscribes to, which
    # Meta sends to the same URL: before, 422, asked again for days.
    unknown_alone = {"entry": [{"changes": [{"value": value(
        statuses=[{"id": out["delivery"]["carrier_id"], "status": "warning"}],
    )}]}]}  # fmt: skip
    template = {"entry": [{"id": "102290129340398", "changes": [{
        "field": "message_template_status_update",
        "value": {"event": "APPROVED", "message_template_id": 5, "reason": "NONE"},
    }]}]}  # fmt: skip
    for nothing_read in (unknown_alone, template):
        passed = await _meta(api, "/v1/lines/whatsapp/inbound", secret, nothing_read)
        assert passed.status == 200, await passed.text()
        assert ((await passed.json())["messages"], (await passed.json())["statuses"]) == (0, 0)

    alone = {"entry": [{"changes": [{"value": value(statuses=[
        {"id": out["delivery"]["carrier_id"], "status": "read"},
    ])}]}]}  # fmt: skip
    statuses = await _meta(api, "/v1/lines/whatsapp/inbound", secret, alone)
    assert statuses.status == 200, await statuses.text()
    assert await statuses.json() == {"room": None, "seq": None, "first_contact": False,
                                     "messages": 0, "statuses": 1}  # fmt: skip

    # A body naming a number that is not this line's is the other line's to sign: refused
    # whole, before anything of it is stored.
    other = {"messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550009999"},
             "messages": [text("447700900123", "wamid.x1", "smuggled")]}  # fmt: skip
    mixed = {"entry": [{"changes": [
        {"value": value(messages=[text("447700900123", "wamid.a3", "kept?")])},
        {"value": other},
    ]}]}  # fmt: skip
    refused = await _meta(api, "/v1/lines/whatsapp/inbound", secret, mixed)
    assert refused.status == 403
    assert "kept?" not in [m["text"] for m in await history(api, room, people.ada)]
