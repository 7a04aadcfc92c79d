"""An SMS's 1,600 characters are counted as Twilio counts them, as it sends them: in GSM-7,
where `€`, `[` and the like take two septets, or, once one character is not GSM-7, in
UCS-2's 16-bit units, where an emoji takes two. Before, they were counted as Python counts
them: 801 emoji, or 1,600 characters one of them a `€`, were taken, and Twilio refused them
(21617) after the room said they were sent. Through the gateway, on the running services."""

import pytest

from libs.contracts.rooms import LINE_MOST, fitted_to_line, line_length
from tests.personal.conftest import Recorder, history, problem
from tests.personal.test_line_limits import _left, _talking, agents_sms

SMS_MOST = LINE_MOST["sms"]


class Beaming(Recorder):
    """A model whose every reply is longer than an SMS holds, in emoji."""

    async def reply(self, prompt) -> str:
        return await super().reply(prompt) + " " + "😀" * SMS_MOST


@pytest.fixture
def model() -> Recorder:
    return Beaming()


@pytest.fixture
def api(whole_api):
    return whole_api


@pytest.mark.parametrize(
    "text, counted",
    [
        ("Yes, 11am.", 10),
        ("[€5]", 7),  # GSM-7, its extension table's characters two septets each
        ("Ça va? ¿Sí?", 11),  # GSM-7's own letters are one each
        ("Yes 😀", 6),  # an emoji makes it UCS-2, and is a surrogate pair there
        ("日本 [x]", 6),  # UCS-2: the brackets are one unit each
        ("a\tb", 3),  # a tab is no GSM-7 character: UCS-2
    ],
)
def test_an_sms_is_counted_as_it_is_sent(text, counted):
    assert line_length("sms", text) == counted
    assert line_length("whatsapp", text) == len(text)


def test_a_text_cut_to_an_sms_is_what_the_carrier_takes_whole():
    for long in ("😀" * 900, "a" * 2000, "ab😀" * 700):
        cut = fitted_to_line(long, "sms")
        assert cut.endswith("…") and line_length("sms", cut) in (SMS_MOST - 1, SMS_MOST), long[:8]
    # 2,000 septets as GSM-7; with the ellipsis, which is not, UCS-2 and 1,000 units.
    assert fitted_to_line("€" * 1000, "sms") == "€" * 999 + "…"
    # 1,598 septets as GSM-7; an emoji makes it UCS-2, where it is 801 units, whole.
    for whole in ("Yes, 11am.", "€" * 799, "€" * 799 + "😀"):
        assert fitted_to_line(whole, "sms") == whole


async def test_a_persons_text_is_refused_past_what_twilio_counts(api, people, operator):
    _, room = await _talking(api, operator, people, "draft")
    path = f"/v1/rooms/{room['id']}/messages"
    before, _ = await _left(operator, people.org)
    for refused_text in ("😀" * (SMS_MOST // 2 + 1), "€" + "n" * (SMS_MOST - 1)):
        refused = await api.post(path, json={"text": refused_text}, headers=people.ada)
        assert await problem(refused) == (422, "too-long-for-line")
        assert (
            f"this one has {SMS_MOST + 1 if '€' in refused_text else SMS_MOST + 2:,}"
            in (await refused.json())["detail"]
        )
    assert (await _left(operator, people.org))[0] == before
    for whole_text in ("😀" * (SMS_MOST // 2), "€" + "w" * (SMS_MOST - 2)):
        whole = await api.post(path, json={"text": whole_text}, headers=people.ada)
        assert whole.status == 201, await whole.text()
        assert (await _left(operator, people.org))[1]["text"] == whole_text


async def test_the_agents_reply_in_emoji_is_cut_to_what_twilio_counts(api, people, operator):
    room, out = await agents_sms(api, operator, people)
    assert out["text"].endswith("…") and line_length("sms", out["text"]) in (SMS_MOST - 1, SMS_MOST)
    assert len(out["text"]) < SMS_MOST  # as Python counts it, far under
    stored = [m for m in await history(api, room, people.ada) if m["author_kind"] == "agent"]
    assert [m["text"] for m in stored][-1] == out["text"]
