"""The console, in headless Chromium (Debian's, driven by Playwright): a person sets their
level and window, reads what send means before choosing it, and watches, edits and stops
pending sends."""

import pytest
from playwright.async_api import expect

from libs.contracts.ladder import SEND_MEANS
from tests.personal.conftest import announce, behind, eventually, history, room_with, say
from tests.support import browser_page, token


@pytest.fixture
def ladder_clock():
    return behind(30)  # a one-minute window ends thirty real seconds after it opens


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console"))) as page:
        yield page


async def _pending(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]


async def test_a_person_sets_their_level_and_window_and_stops_and_edits_pending_sends(
    api, operator, people, page
):
    await announce(operator, people.ada_id)
    await page.fill("#token", token(org=people.org, user=people.ada_id))
    await page.click("#use")
    await expect(page.locator("input[value=draft]")).to_be_checked()

    await page.check("input[value=send]")
    await expect(page.locator("#send-means")).to_have_text(SEND_MEANS)
    await expect(page.locator("#save-level")).to_be_disabled()
    await page.check("#understand")
    await page.click("#save-level")
    await expect(page.locator("#status")).to_have_text("Saved: send.")

    await page.select_option("#window", "instant")
    await expect(page.locator("#window-statement")).to_contain_text("nothing protects you")
    await page.select_option("#window", "1m")
    await page.click("#save-window")
    await expect(page.locator("#status")).to_have_text("Saved: window 1m.")
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert (mine["settings"]["default"], mine["settings"]["window"]) == ("send", "1m")

    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Can you resend the invoice?", to=people.ada_id)
    item = page.locator("#pending li")
    await expect(item).to_have_count(1, timeout=10_000)
    await expect(item.locator(".left")).to_contain_text("Sends in")
    await item.get_by_role("button", name="Stop").click()
    await expect(page.locator("#status")).to_have_text("Stopped: nothing was sent.")
    assert await _pending(api, people) == []
    stopped = page.locator("#closed li[data-state=stopped]")
    await expect(stopped).to_contain_text("You stopped it: nothing was sent.", timeout=10_000)

    await say(api, room, people.bob, "And the receipt?", to=people.ada_id)
    await expect(item).to_have_count(1, timeout=10_000)
    await item.locator("textarea").fill("Both are attached now. Ada")
    await item.get_by_role("button", name="Send my version instead").click()
    await expect(page.locator("#status")).to_have_text("Sent your version instead.")

    async def mine_sent():
        return [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]

    [sent] = await eventually(mine_sent)
    assert (sent["text"], sent["author_kind"]) == ("Both are attached now. Ada", "human")
    assert not [
        m
        for m in await history(api, room, people.bob)
        if m["author_kind"] == "agent" and not m.get("notice")
    ]


async def test_lowering_in_the_console_needs_no_confirmation(api, page, people):
    await api.put(
        "/v1/ladder", json={"level": "send", "acknowledge": SEND_MEANS}, headers=people.ada
    )
    await page.fill("#token", token(org=people.org, user=people.ada_id))
    await page.click("#use")
    await expect(page.locator("input[value=send]")).to_be_checked()
    await page.check("input[value=draft]")
    await expect(page.locator("#send-warning")).to_be_hidden()
    await page.click("#save-level")
    await expect(page.locator("#status")).to_have_text("Saved: draft.")


async def test_the_console_shows_what_applies_in_each_room_and_which_setting_decided_it(
    api, page, people
):
    team = await room_with(api, people, people.bob_id, title="team")
    await room_with(api, people, people.bob_id, title="lunch")
    mine = {"level": "confirm", "scope": "room", "target": team["id"]}
    assert (await api.put("/v1/ladder", json=mine, headers=people.ada)).status == 200
    await page.fill("#token", token(org=people.org, user=people.ada_id))
    await page.click("#use")
    rooms = page.locator("#rooms li")
    await expect(rooms).to_have_count(2)
    await expect(page.locator(f"#rooms li[data-room={team['id']}]")).to_have_text(
        "team: confirm (set for this room)"
    )
    await expect(rooms.filter(has_text="lunch")).to_have_text("lunch: draft (my level everywhere)")
