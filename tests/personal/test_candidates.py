"""Issue 14.6: a question says what it admits (decline named among its actions) and offers
up to three candidates where the model gives them; through the running services."""

import pytest
from playwright.async_api import expect

from libs.model import Scripted
from services.agents.domain.prompt import CANDIDATES, candidates
from tests.personal.conftest import announce, eventually, history, room_with, say, set_level
from tests.personal.test_pending import pending
from tests.support import browser_page, token

OFFERED = ["Friday works.", "Can we do Monday?", "Let me check and come back.", "A fourth."]


@pytest.fixture
def model():
    """A model that offers four replies when its prompt lets it (only three may reach the
    person)."""

    def offered(prompt) -> str:
        assert CANDIDATES in prompt.system
        return '{"candidates": ' + str(OFFERED).replace("'", '"') + "}"

    return Scripted(offered)


@pytest.fixture
def api(whole_api):
    return whole_api


def test_the_model_s_answer_is_one_reply_or_at_most_three_candidates():
    assert candidates("Sure, see you then.") == ("Sure, see you then.",)
    assert candidates('{"candidates": ["A", " ", "B", "A", "C", "D"]}') == ("A", "B", "C")
    assert candidates('{"candidates": []}') == ('{"candidates": []}',)
    assert candidates('{"reply": "x"}') == ('{"reply": "x"}',)


async def test_a_confirmation_offers_the_model_s_three_candidates_and_names_decline(
    api, operator, people
):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    await set_level(api, people.ada, "confirm")
    await say(api, room, people.bob, "When shall we meet?", to=people.ada_id)

    async def asked() -> list[dict]:
        found = await api.get("/v1/confirmations", headers=people.ada)
        return (await found.json())["confirmations"]

    (confirmation,) = await eventually(asked)
    assert list(confirmation["candidates"]) == OFFERED[:3]
    assert confirmation["actions"] == ["pick", "edit", "decline"]
    (item,) = await pending(api, people.ada)
    assert [a["name"] for a in item["actions"]] == ["pick 0", "pick 1", "pick 2", "edit", "decline"]
    question = next(m for m in await history(api, room, people.ada) if m.get("question"))
    assert question["question"]["options"] == OFFERED[:3]

    pick = {"choice": {"type": "pick", "option": 2}}
    picked = await api.post(f"/v1/confirmations/{confirmation['id']}", json=pick,
                            headers=people.ada)  # fmt: skip
    assert picked.status == 200, await picked.text()

    async def sent() -> list[dict]:
        return [m for m in await history(api, room, people.bob) if m["author_kind"] == "agent"]

    (reply,) = await eventually(sent)
    assert reply["text"] == OFFERED[2]


async def test_at_draft_the_draft_is_the_first_candidate(api, operator, people):
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "When shall we meet?", to=people.ada_id)

    async def drafted() -> list[dict]:
        return [i for i in await pending(api, people.ada) if i["kind"] == "draft"]

    (draft,) = await eventually(drafted)
    assert draft["text"] == OFFERED[0]


async def test_the_console_numbers_the_candidates_and_sends_the_one_picked(api, operator, people):
    """In the console, a confirmation's candidates are a numbered list, each sent by its
    own button ("Send: 2"); one of one candidate is plain "Send" (tests/personal/
    test_console.py), as it has no list to number from."""
    await announce(operator, people.ada_id)
    room = await room_with(api, people, people.bob_id)
    await set_level(api, people.ada, "confirm")
    async with browser_page(str(api.make_url("/console"))) as page:
        await page.fill("#token", token(org=people.org, user=people.ada_id))
        await page.click("#use")
        await say(api, room, people.bob, "When shall we meet?", to=people.ada_id)
        confirmation = page.locator("#pending > li[data-kind=confirmation]")
        await expect(confirmation.locator(".candidates li")).to_have_text(OFFERED[:3])
        names = ["Send: 1", "Send: 2", "Send: 3", "Send my version", "Decline"]
        await expect(confirmation.get_by_role("button")).to_have_text(names)
        await confirmation.get_by_role("button", name="Send: 2").click()
        await expect(page.locator("#status")).to_have_text("Sent.", timeout=10_000)

    async def sent() -> list[dict]:
        return [m for m in await history(api, room, people.bob) if m["author_kind"] == "agent"]

    (reply,) = await eventually(sent)
    assert reply["text"] == OFFERED[1]
