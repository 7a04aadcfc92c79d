"""A message's text is text: any number of lines, no C0 control character or DEL. No
carrier takes one, and what an agent says on a call is TwiML's <Say>, an XML document,
which may not hold one (the carrier answers an application error to the caller). A
person's text holding one is refused naming it; an agent's reply quoting one (the built-in
model quotes what it answers) is drafted without it; what arrived keeps it as it came. A
text, a title or an id refused says in its detail what it must be."""

from tests.personal.conftest import announce, drafts, eventually, history, problem, room_with
from tests.personal.test_hip0524_09_personal_line import connect, sms


async def test_a_persons_text_with_a_control_character_is_refused_by_name(api, people):
    room = await room_with(api, people, people.bob_id)
    path = f"/v1/rooms/{room['id']}/messages"
    for text in ("nul \u0000", "bell \u0007", "colour \u001b[31m", "del \u007f"):
        refused = await api.post(path, json={"text": text}, headers=people.ada)
        assert await problem(refused) == (422, "invalid-request")
        assert (await refused.json())["detail"] == (
            "Expected text with no control character but a tab and line breaks - at `$.text`"
        )
    posted = await api.post(path, json={"text": "two\nlines\tand a tab"}, headers=people.ada)
    assert posted.status == 201, await posted.text()
    assert [m["text"] for m in await history(api, room, people.ada)] == ["two\nlines\tand a tab"]


async def test_an_agents_draft_quoting_a_control_character_holds_none(api, operator, people):
    await announce(operator, people.ada_id)
    line = await connect(api, operator, people)
    arrived = await (await sms(api, line, "+14155550100", "Hi\u0007 there\u001b")).json()
    room = {"id": arrived["room"]}
    [draft] = await eventually(lambda: drafts(api, room, people.ada))
    assert "Hi there" in draft["text"]
    assert not any((ord(c) < 32 and c not in "\t\n\r") or c == "\u007f" for c in draft["text"])
    [kept] = await history(api, room, people.ada)
    assert kept["text"] == "Hi\u0007 there\u001b"  # what arrived is kept as it came


async def test_a_title_that_is_not_printable_is_refused_in_words(api, people):
    """A title is one printable line: a bidi override would show it reversed in a list."""
    body = {"title": "rent \u202eevil", "members": [people.bob_id]}
    refused = await api.post("/v1/rooms", json=body, headers=people.ada)
    assert await problem(refused) == (422, "invalid-request")
    assert (await refused.json())["detail"] == (
        "Expected printable text (no control character, zero-width space, line or paragraph "
        "separator, bidi control or byte order mark) - at `$.title`"
    )


async def test_an_id_not_of_its_form_is_refused_with_its_form(api, people):
    """The form as written, without the `(?!\\n)` that keeps a trailing newline out."""
    refused = await api.get("/v1/rooms/r1/messages", headers=people.ada)
    assert await problem(refused) == (422, "invalid-request")
    assert (await refused.json())["detail"] == (
        "Expected `str` matching `^[a-z]+-[0-9a-f]{16}$` - at `$.id`"
    )
