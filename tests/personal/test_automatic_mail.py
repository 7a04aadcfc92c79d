"""RFC 3834 §2: an automatic responder does not answer what was itself sent automatically.
An out-of-office, a bounce, a list's or a bulk mail arrives by a person's email line as
before, marked `automatic`, and no agent answers it. Before, Ada's agent at send answered
a landlord's out-of-office, which answered it, which her agent answered, without end; and
an out-of-office from someone who had marked her mail as spam opted them back in."""

import secrets
from urllib.parse import urlencode

import msgspec
import pytest

from libs.contracts.rooms import ROOMS, Inbound, MessageStored
from libs.contracts.streams import EVENTS
from services.rooms.domain.lines import arrival
from tests.personal.conftest import (
    announce,
    drafts,
    eventually,
    history,
    problem,
    raised,
    set_level,
)
from tests.personal.test_signature_replay import (
    FORM,
    a_reply_by_email,
    email_line,
    mailgun_event,
    signed,
)

OUT_OF_OFFICE = [["Auto-Submitted", "auto-replied"], ["Subject", "Out of office"]]


@pytest.fixture
def api(whole_api):
    return whole_api


def _email(line: dict, text: str, headers: list[list[str]] | None = None) -> dict[str, str]:
    body = {"sender": "landlord@example.org", "recipient": line["address"], "body-plain": text,
            "Message-Id": f"<{secrets.token_hex(6)}@example.org>", **signed()}  # fmt: skip
    if headers is not None:
        body["message-headers"] = msgspec.json.encode(headers).decode()
    return body


async def _arrives(api, body: dict[str, str]) -> dict:
    arrived = await api.post("/v1/lines/email/inbound", data=urlencode(body), headers=FORM)
    assert arrived.status == 200, await arrived.text()
    return await arrived.json()


async def _raised(operator, since: int, room: str, seq: int) -> MessageStored:
    return msgspec.json.decode((await raised(operator, since, room, seq)).data, type=MessageStored)


async def test_an_out_of_office_is_kept_and_answered_by_no_agent(api, people, operator):
    await announce(operator, people.ada_id)

    async def has_agent() -> bool:
        return (await api.get("/v1/agents/me", headers=people.ada)).status == 200

    await eventually(has_agent)
    line, _, room, _ = await a_reply_by_email(api, operator, people)  # past the first contact
    await set_level(api, people.ada, "send")
    instant = await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    assert instant.status == 200, await instant.text()
    since = (await operator.jetstream().stream_info(EVENTS.name)).state.last_seq + 1

    away = await _arrives(api, _email(line, "I am away until Monday.", OUT_OF_OFFICE))
    event = await _raised(operator, since, room["id"], away["seq"])
    assert (event.room, event.answerer) == (room["id"], None)
    [kept] = [m for m in await history(api, room, people.ada) if m["seq"] == away["seq"]]
    assert (kept["automatic"], kept["text"]) == (True, "I am away until Monday.")

    # What the landlord writes themselves is answered, as before.
    asked = await _arrives(api, _email(line, "Back now: is the flat free?"))
    answered = await _raised(operator, since, room["id"], asked["seq"])
    assert answered.answerer == f"agent:{people.ada_id}"

    async def replied() -> list[dict]:
        found = await history(api, room, people.ada)
        return [m for m in found if m.get("reply_to") == asked["seq"] and not m.get("private")]

    [reply] = await eventually(replied)
    found = await history(api, room, people.ada)
    assert [m for m in found if m.get("reply_to") == away["seq"]] == []
    # Its own reply, sent with no one asked, leaves marked so (RFC 3834 §5), so that the
    # landlord's responder does not answer it in turn; Ada's own words leave unmarked.
    outbound = f"rooms.outbound.email.{people.org}"
    left = await operator.jetstream().get_last_msg(ROOMS.name, outbound)
    assert (reply["automatic"], msgspec.json.decode(left.data)["automatic"]) == (True, True)
    path = f"/v1/rooms/{room['id']}/messages"
    own = await api.post(path, json={"text": "See you Monday."}, headers=people.ada)
    assert own.status == 201, await own.text()
    left = await operator.jetstream().get_last_msg(ROOMS.name, outbound)
    assert msgspec.json.decode(left.data)["automatic"] is False


async def test_an_auto_reply_does_not_opt_back_in_someone_who_opted_out(api, people, operator):
    line, _, room, reply = await a_reply_by_email(api, operator, people)
    body = mailgun_event(line, reply, "complained", signed())
    told = await api.post(
        "/v1/lines/email/status", data=body, headers={"Content-Type": "application/json"}
    )
    assert told.status == 200, await told.text()
    await _arrives(api, _email(line, "I am away until Monday.", OUT_OF_OFFICE))
    path = f"/v1/rooms/{room['id']}/messages"
    refused = await api.post(path, json={"text": "Following up."}, headers=people.ada)
    assert await problem(refused) == (409, "opted-out")


async def test_a_list_s_mail_is_no_first_contact_and_holds_no_draft(api, people, operator):
    line = await email_line(api, operator, people)
    since = (await operator.jetstream().stream_info(EVENTS.name)).state.last_seq + 1
    news = await _arrives(api, _email(line, "This week's listings", [["List-Id", "<homes.x>"]]))
    event = await _raised(operator, since, news["room"], news["seq"])
    assert (event.first_contact, event.answerer) == (False, None)
    assert await drafts(api, {"id": news["room"]}, people.ada) == []
    # The sender writing themselves is the first contact, the person's to answer: before,
    # the list's mail had been it, and an agent at send answered them unasked.
    wrote = await _arrives(api, _email(line, "Saw your profile: still looking?"))
    assert wrote["room"] == news["room"]
    assert (await _raised(operator, since, wrote["room"], wrote["seq"])).first_contact is True


@pytest.mark.parametrize(
    "headers, automatic",
    [
        ([], False),
        ([["Auto-Submitted", "no"]], False),
        ([["Auto-Submitted", "No ; comment"]], False),
        ([["Auto-Submitted", "auto-replied"]], True),
        ([["auto-submitted", "auto-generated; owner-email=x@y"]], True),
        ([["Precedence", "bulk"]], True),
        ([["Precedence", "List"]], True),
        ([["Precedence", "first-class"]], False),
        ([["List-Id", "Homes <homes.example.org>"]], True),
        ([["Reply-To", "desk@agency.example"]], False),
    ],
)
def test_what_rfc_3834_says_no_responder_answers(headers, automatic):
    fields = {"sender": "a@example.org", "recipient": "b@example.com", "body-plain": "x",
              "Message-Id": "<1@example.org>",
              "message-headers": msgspec.json.encode(headers).decode()}  # fmt: skip
    inbound = Inbound(transport="email", url="https://t.example/", body=urlencode(fields))
    assert arrival(inbound).automatic is automatic
