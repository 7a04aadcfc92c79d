"""The rooms' rules as pure functions: who answers, who wrote it, lines and signatures."""

import contextlib
import json
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.rooms import CreateRoom, Draft, Inbound
from services.rooms.domain import claims, drafts, lines, members, messages, threads

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
ADA, BOB = "acme/ada", "acme/bob"


def _room():
    request = CreateRoom(title="t", members=(BOB,), scope="org")
    return members.new_room(
        request, Principal(org="acme", sub=ADA), "r-0000000000000001", NOW, max_members=20
    )


def _made(*others: str, limit: int = 20):
    request = CreateRoom(title="t", members=others, scope="org")
    return members.new_room(
        request, Principal(org="acme", sub=ADA), "r-0000000000000001", NOW, max_members=limit
    )


def test_a_room_holds_no_more_people_and_bots_than_the_plan_allows():
    assert len(_made(*(f"acme/p{i}" for i in range(19))).members) == 2 * 20 + 1
    with pytest.raises(Refused) as refused:
        _made(*(f"acme/p{i}" for i in range(20)))
    assert refused.value.problem.rule == "too-many-members"


def test_a_room_holds_people_and_bots_of_its_own_org_only():
    with pytest.raises(Refused) as refused:
        _made(BOB, "globex/eve", "bot:globex:spy", "bot:acme")
    assert refused.value.problem.errors == ("globex/eve", "bot:globex:spy", "bot:acme")
    assert [m.id for m in _made("bot:acme:standup").members if m.kind == "bot"] == [
        "bot:acme:standup"
    ]


def test_a_room_holds_each_person_with_their_agent_and_the_orgs_agent():
    assert [(m.kind, m.id) for m in _room().members] == [
        ("human", ADA),
        ("agent", "agent:acme/ada"),
        ("human", BOB),
        ("agent", "agent:acme/bob"),
        ("agent", "agent:acme"),
    ]


@pytest.mark.parametrize(
    "author, act, to, answerer",
    [
        (BOB, None, ADA, "agent:acme/ada"),
        (BOB, None, "org", "agent:acme"),
        (BOB, None, None, None),
        (ADA, "agent:acme/ada", BOB, None),  # an agent's message is not answered
        (BOB, None, "acme/carol", None),  # not in the room: refused before this
    ],
    ids=["to-a-person", "to-the-org", "to-no-one", "by-an-agent", "to-a-stranger"],
)
def test_exactly_one_agent_or_none_answers(author, act, to, answerer):
    room = _room()
    principal = Principal(org="acme", sub=author, act=act)
    if to == "acme/carol":
        with pytest.raises(Refused):
            messages.authored(room, principal, "hi", NOW, to=to)
        return
    message = messages.authored(room, principal, "hi", NOW, to=to)
    assert members.answerer(room, message) == answerer


def test_the_author_and_kind_come_from_the_principal_alone():
    room = _room()
    by_agent = messages.authored(
        room, Principal(org="acme", sub=ADA, act="agent:acme/ada"), "x", NOW
    )
    assert (by_agent.author, by_agent.author_kind, by_agent.on_behalf_of) == (
        "agent:acme/ada",
        "agent",
        ADA,
    )
    by_person = messages.authored(room, Principal(org="acme", sub=ADA), "x", NOW)
    assert (by_person.author, by_person.author_kind, by_person.on_behalf_of) == (
        ADA,
        "human",
        None,
    )


def test_twilios_own_published_signature_example_verifies():
    """From Twilio's request-validation snippet (TwilioDevEd/api-snippets)."""
    fields = [
        ("CallSid", "CA1234567890ABCDE"),
        ("Caller", "+14158675310"),
        ("Digits", "1234"),
        ("From", "+14158675310"),
        ("To", "+18005551212"),
    ]
    url = "https://mycompany.com/myapp.php?foo=1&bar=2"
    assert lines.sign_twilio("12345", url, fields) == "GvWf1cFY/Q7PnoempGyD5oXAezc="


@pytest.mark.parametrize("transport", ["sms", "email", "whatsapp"])
def test_a_tampered_body_fails_its_carriers_signature(transport):
    secret = "s3cret-signing-key"
    stamp = str(int(NOW.timestamp()))
    if transport == "sms":
        body = "Body=hi&From=%2B14155550100&MessageSid=SM1&To=%2B15550001111"
        signature = lines.sign_twilio(
            secret,
            "https://t.example/in",
            sorted(
                [
                    ("Body", "hi"),
                    ("From", "+14155550100"),
                    ("MessageSid", "SM1"),
                    ("To", "+15550001111"),
                ]
            ),
        )
    elif transport == "email":
        sig = lines.sign_mailgun(secret, stamp, "tok")
        body = f"timestamp={stamp}&token=tok&signature={sig}&body-plain=hi"
        signature = ""
    else:
        body = '{"entry": []}'
        signature = lines.sign_meta(secret, body.encode())
    good = Inbound(transport=transport, url="https://t.example/in", signature=signature, body=body)
    lines.verify(good, secret, NOW)
    tampered = Inbound(
        transport=transport,
        url="https://t.example/in",
        signature=signature,
        body=body.replace("hi", "ho").replace("[]", "[1]"),
    )
    if transport == "email":  # Mailgun signs the timestamp and token, not the body
        tampered = Inbound(transport=transport, url="x", body=body.replace("tok", "tak"))
    with pytest.raises(Refused) as refused:
        lines.verify(tampered, secret, NOW)
    assert refused.value.problem.rule == "signature-invalid"


def test_a_line_and_correspondent_always_name_the_same_room():
    one = lines.room_id("sms", "acme", ADA, "+14155550100")
    assert one == lines.room_id("sms", "acme", ADA, "+14155550100")
    assert one != lines.room_id("sms", "acme", BOB, "+14155550100")
    assert one != lines.room_id("sms", "acme", ADA, None)  # the hub
    assert lines.normalize("email", " Ada@Example.COM ") == "ada@example.com"
    assert lines.normalize("whatsapp", "whatsapp:+447700900123") == "+447700900123"


def _whatsapp(message: dict) -> str:
    value = {"metadata": {"display_phone_number": "15550001111"},
             "messages": [{"from": "447700900123", "id": "wamid.1", **message}]}  # fmt: skip
    body = json.dumps({"entry": [{"changes": [{"value": value}]}]})
    [arrived] = lines.arrivals(Inbound(transport="whatsapp", url="u", body=body))
    return arrived.text


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"type": "text", "text": {"body": "Hiya"}}, "Hiya"),
        ({"type": "image", "image": {"caption": "The door", "mime_type": "image/jpeg",
                                     "id": "m1"}}, "The door\n[image image/jpeg m1]"),
        ({"type": "document", "document": {"filename": "lease.pdf", "mime_type":
                                           "application/pdf", "id": "m2"}},
         "[document application/pdf lease.pdf m2]"),
        ({"type": "interactive", "interactive": {"type": "button_reply",
                                                 "button_reply": {"id": "b1", "title": "Yes"}}},
         "Yes"),
        ({"type": "button", "button": {"text": "Stop promotions", "payload": "p"}},
         "Stop promotions"),
        ({"type": "reaction", "reaction": {"message_id": "wamid.0", "emoji": "👍"}}, "👍"),
        ({"type": "location", "location": {"latitude": 51.5, "longitude": -0.12,
                                           "name": "Office"}}, "[location Office 51.5,-0.12]"),
        ({"type": "sticker", "sticker": {}}, "[sticker]"),
        ({"type": "unsupported"}, "[unsupported]"),
    ],
    ids=["text", "image", "document", "interactive", "button", "reaction", "location",
         "sticker", "unsupported"],
)  # fmt: skip
def test_a_whatsapp_message_of_any_type_says_what_it_was(message, said):
    """Before, all but text landed as an empty message: a picture, a document, the button
    a person pressed, all lost without a word."""
    assert _whatsapp(message) == said


def test_whatsapps_own_system_message_is_kept_and_sent_automatically():
    """Meta's `system` message (its sender changed their number) is WhatsApp's, not the
    person's words: before, an agent at send answered it."""
    value = {"metadata": {"display_phone_number": "15550001111"},
             "messages": [{"from": "447700900123", "id": "wamid.2", "type": "system",
                           "system": {"body": "User A changed from 447700900123 to 447700900999",
                                      "type": "user_changed_number"}}]}  # fmt: skip
    body = json.dumps({"entry": [{"changes": [{"value": value}]}]})
    [arrived] = lines.arrivals(Inbound(transport="whatsapp", url="u", body=body))
    assert (arrived.text, arrived.automatic) == (
        "User A changed from 447700900123 to 447700900999",
        True,
    )
    assert lines.arrivals(Inbound(transport="whatsapp", url="u", body=body.replace(
        '"system"', '"text"', 1)))[0].automatic is False  # fmt: skip


def test_an_sms_or_email_with_nothing_but_media_says_so():
    mms = (
        "From=%2B14155550100&To=%2B15550001111&Body=&MessageSid=SM1&NumMedia=2"
        "&MediaUrl0=https%3A%2F%2Fm%2F0&MediaContentType0=image%2Fpng&MediaUrl1=https%3A%2F%2Fm%2F1"
    )
    assert lines.arrival(Inbound(transport="sms", url="u", body=mms)).text == (
        "[image/png: https://m/0]\n[media: https://m/1]"
    )
    # The count a webhook states is not read: before its signature is checked, a count
    # of a hundred billion would have been walked.
    stated = "From=%2B14155550100&To=%2B15550001111&Body=hi&MessageSid=SM3&NumMedia=99999999999"
    assert lines.arrival(Inbound(transport="sms", url="u", body=stated)).text == "hi"
    empty = "From=%2B14155550100&To=%2B15550001111&Body=&MessageSid=SM2"
    assert lines.arrival(Inbound(transport="sms", url="u", body=empty)).text == (
        "[an empty message]"
    )


def _held() -> Draft:
    return Draft(
        id="d-1-1",
        room="r-1",
        org="acme",
        agent="agent:acme/ada",
        person="acme/ada",
        reply_to=1,
        text="Yes.",
        first_contact=False,
        state="open",
        created_at=NOW,
    )


def test_a_send_claims_its_draft_so_no_discard_wins_after_it():
    held = _held()
    sending = drafts.claimed(held)
    assert sending.state == "sending"
    assert drafts.claimed(sending) == sending  # a send asked again completes it
    with pytest.raises(Refused) as refused:
        drafts.discarded(sending)
    assert refused.value.problem.rule == "draft-closed"
    assert drafts.reopened(sending) == held  # refused before anything was stored
    sent = drafts.sent(sending, 7)
    assert (sent.state, sent.sent_seq) == ("sent", 7)
    assert drafts.reopened(sent) == sent
    with pytest.raises(Refused):
        drafts.claimed(sent)


_MOVES = {
    "claim": drafts.claimed,
    "reopen": drafts.reopened,
    "send": lambda d: drafts.sent(d, 7),
    "discard": drafts.discarded,
}


@given(st.lists(st.sampled_from(sorted(_MOVES)), max_size=8))
def test_a_closed_draft_never_moves_and_a_claimed_one_is_never_discarded(moves):
    draft = _held()
    for move in moves:
        before = draft
        with contextlib.suppress(Refused):
            draft = _MOVES[move](draft)
        if before.state in ("sent", "discarded"):
            assert draft == before
        if before.state == "sending":
            assert draft.state != "discarded"


@pytest.mark.parametrize(
    "said, opt",
    [("STOP", "out"), (" stop ", "out"), ("Unsubscribe", "out"), ("START", "in"),
     ("unstop", "in"), ("Stop it please", None), ("HELP", None)],
)  # fmt: skip
def test_a_text_opts_its_sender_out_or_in_as_twilio_reads_it(said, opt):
    text = urlencode({"From": "+14155550100", "To": "+14155550101", "Body": said,
                      "MessageSid": "SM1"})  # fmt: skip
    assert lines.arrival(Inbound(transport="sms", url="u", body=text)).opt == opt
    # Twilio's Advanced Opt-Out names it, whatever the words.
    named = urlencode({"From": "+14155550100", "To": "+14155550101", "Body": "no more",
                       "MessageSid": "SM2", "OptOutType": "STOP"})  # fmt: skip
    assert lines.arrival(Inbound(transport="sms", url="u", body=named)).opt == "out"


def test_whatsapp_takes_a_message_within_24_hours_of_the_correspondents_last():
    day = timedelta(hours=24)
    assert lines.in_service_window("whatsapp", NOW - day, NOW)
    assert not lines.in_service_window("whatsapp", NOW - day - timedelta(seconds=1), NOW)
    assert lines.in_service_window("whatsapp", None, NOW)  # not kept yet: Meta decides
    assert lines.in_service_window("sms", NOW - 10 * day, NOW)


def _claimed(address: str, now: datetime, before: claims.Claim | None = None) -> claims.Claim:
    return claims.claim(
        "acme", "acme/ada", "sms", address, b"sealed",
        code="123456", salt="s", now=now, before=before,
    )  # fmt: skip


@given(
    moves=st.lists(st.tuples(st.sampled_from(["claim", "guess"]), st.integers(0, 900)), max_size=40)
)
def test_a_persons_guesses_at_a_code_are_five_in_ten_minutes_however_often_they_claim(moves):
    """Whatever order of claims (any address) and wrong guesses, seconds apart: no more than
    five guesses are tried against a code, and three codes sent, in a claim's ten minutes."""
    now, claim, tried, codes = NOW, None, 0, 0
    for move, seconds in moves:
        now += timedelta(seconds=seconds)
        if claim is not None and now >= claim.expires_at:
            claim, tried, codes = None, 0, 0  # its time is over: a claim starts afresh
        if move == "claim":
            try:
                claim = _claimed(f"+1415555{seconds:04d}", now, claim)
            except Refused as exc:
                assert exc.problem.status == 429
                continue
            codes += 1
        elif claim is not None:
            left = claim.tries_left
            outcome, claim = claims.attempt(claim, "000000", now)
            tried += left > 0 and outcome in ("wrong", "spent")
        assert codes <= claims.CODES and tried <= claims.TRIES


def test_an_emails_thread_is_read_from_what_its_carrier_posts():
    bare = threads.thread_of("Lunch?\n\tFriday", "abc@mail.example", {})
    assert bare == threads.Thread("Lunch? Friday", "<abc@mail.example>", ())
    replying = threads.thread_of("x", "<b@x>", {"in-reply-to": "<a@x>"})
    assert replying is not None and replying.references == ("<a@x>",)
    assert threads.thread_of("x", "not an id", {}) is None
    assert threads.answering(threads.Thread("", "<a@x>")) == threads.Answering(
        "", "<a@x>", ("<a@x>",)
    )
