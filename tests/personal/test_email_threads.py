"""A reply by a person's email line is a reply in the correspondent's thread (RFC 5322
§3.6.4): "Re: " and the subject of the mail it answers, that mail's Message-ID as its
In-Reply-To, and the thread's References ending with it. Before, what left carried none of
them: the correspondent's mail client showed Ada's answer as a new conversation with no
subject, apart from what they had asked."""

import secrets
from urllib.parse import urlencode

import msgspec
import pytest

from libs.contracts.rooms import ROOMS
from services.rooms.domain.threads import REFERENCES_KEPT
from tests.personal.test_signature_replay import FORM, email_line, signed


@pytest.fixture
def api(whole_api):
    return whole_api


async def _mail(api, line: dict, subject: str, message_id: str, **headers: str) -> dict:
    named = [["Subject", subject], *([n.replace("_", "-").title(), v] for n, v in headers.items())]
    body = {
        "sender": "landlord@example.org", "recipient": line["address"], "subject": subject,
        "body-plain": "Is the flat still free?", "Message-Id": message_id, **signed(),
        "message-headers": msgspec.json.encode(named).decode(),
    }  # fmt: skip
    arrived = await api.post("/v1/lines/email/inbound", data=urlencode(body), headers=FORM)
    assert arrived.status == 200, await arrived.text()
    return await arrived.json()


async def _answered(api, operator, people, room: str, text: str) -> dict:
    """Ada's reply in `room`, as it left by her line."""
    posted = await api.post(f"/v1/rooms/{room}/messages", json={"text": text}, headers=people.ada)
    assert posted.status == 201, await posted.text()
    seq = (await posted.json())["seq"]
    out = await operator.jetstream().get_last_msg(ROOMS.name, f"rooms.outbound.email.{people.org}")
    left = msgspec.json.decode(out.data)
    assert (left["room"], left["seq"]) == (room, seq)
    return left


async def test_a_reply_by_email_is_threaded_under_the_mail_it_answers(api, people, operator):
    line = await email_line(api, operator, people)
    mark = secrets.token_hex(4)
    first, second = f"<m1.{mark}@example.org>", f"<m2.{mark}@example.org>"
    arrived = await _mail(api, line, "Flat on Elm St", second, references=first)

    left = await _answered(api, operator, people, arrived["room"], "It is.")
    assert left["answering"] == {
        "subject": "Re: Flat on Elm St", "in_reply_to": second, "references": [first, second]
    }  # fmt: skip

    # Their answer to it, already "Re:": Ada's next reply is under it, "Re:" once.
    third = f"<m3.{mark}@example.org>"
    await _mail(api, line, "RE: Flat on Elm St", third, references=f"{first} {second}")
    left = await _answered(api, operator, people, arrived["room"], "Come on Monday.")
    assert left["answering"] == {
        "subject": "RE: Flat on Elm St", "in_reply_to": third,
        "references": [first, second, third],
    }  # fmt: skip


async def test_a_long_thread_names_its_newest_mails_and_an_auto_reply_is_not_answered_to(
    api, people, operator
):
    line = await email_line(api, operator, people)
    mark = secrets.token_hex(4)
    older = " ".join(f"<o{i}.{mark}@example.org>" for i in range(40))
    last = f"<last.{mark}@example.org>"
    arrived = await _mail(api, line, "Keys", last, references=older)
    # An out-of-office in the room meanwhile is no mail of theirs to answer under.
    await _mail(api, line, "Out of office", f"<ooo.{mark}@example.org>",
                auto_submitted="auto-replied")  # fmt: skip
    left = await _answered(api, operator, people, arrived["room"], "Thanks.")
    references = left["answering"]["references"]
    assert len(references) == REFERENCES_KEPT and references[-1] == last
    assert references[0] == f"<o{40 - REFERENCES_KEPT + 1}.{mark}@example.org>"
    assert (left["answering"]["subject"], left["answering"]["in_reply_to"]) == ("Re: Keys", last)
