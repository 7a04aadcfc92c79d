"""The console, in headless Chromium (Debian's, driven by Playwright): its first page is
everything waiting on the person, live, each item done from it (a draft sent, a
confirmation picked, a window stopped, an ask approved); and a person sets their level and
window, reads what send means before choosing it, and watches, edits and stops pending sends."""

import asyncio
import re

import pytest
from playwright.async_api import Route, expect

from libs.contracts import rooms
from libs.contracts.ladder import SEND_MEANS
from libs.runtime.calls import call
from tests.personal.conftest import (
    announce,
    behind,
    eventually,
    fresh_number,
    history,
    room_with,
    say,
    set_level,
)
from tests.personal.test_hip0524_09_personal_line import TOKEN as LINE_SECRET
from tests.personal.test_hip0524_09_personal_line import code_sent
from tests.personal.test_pending import (
    HIDE_BOARD,
    SIM,
    ana_asks_for_a_packet,
    ask_over_the_limit,
    large_asks,
    pending,
)
from tests.support import accessible, bearer, browser_page, expiring, led_to, token

# A step's answer crosses the gateway, its service and the audit: a fresh `make test` met
# Playwright's 5 s default once on an approval, the machine busy (list steps wait 10 s).
ANSWERED = 10_000


@pytest.fixture
def api(whole_api):
    return whole_api


@pytest.fixture
def ladder_clock():
    return behind(30)  # a one-minute window ends thirty real seconds after it opens


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console"))) as page:
        yield page


async def sign_in(page, people, user: str | None = None, **claims) -> None:
    """Ada (or `user` of her org) signs in on the page, as a person pastes their token."""
    await page.fill("#token", token(org=people.org, user=user or people.ada_id, **claims))
    await page.click("#use")


async def _pending(api, people) -> list[dict]:
    return (await (await api.get("/v1/windows", headers=people.ada)).json())["windows"]


async def test_the_first_page_is_what_waits_on_me_live_and_each_is_done_from_it(
    api, operator, people, page
):
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#none")).to_be_visible()
    items = page.locator("#pending > li")
    room = await room_with(api, people, people.bob_id)

    # A draft arrives while the page is open, and is sent from it.
    await say(api, room, people.bob, "Can you send the deck?", to=people.ada_id)
    draft = page.locator("#pending > li[data-kind=draft]")
    await expect(draft).to_have_count(1, timeout=10_000)
    await expect(draft.locator(".room")).to_have_text("In team")  # made after the page
    bob = people.bob_id.split("/")[1]
    await expect(draft.locator(".answers")).to_have_text(f"Answers {bob}: “Can you send the deck?”")
    await draft.get_by_role("button", name="Send", exact=True).click()
    await expect(page.locator("#status")).to_have_text("Sent.", timeout=ANSWERED)

    # A confirmation, answered by picking its first candidate.
    await set_level(api, people.ada, "confirm", "room", room["id"])
    await say(api, room, people.bob, "And the notes?", to=people.ada_id)
    confirmation = page.locator("#pending > li[data-kind=confirmation]")
    await expect(confirmation).to_have_count(1, timeout=10_000)
    await expect(confirmation.get_by_role("button", name="Decline")).to_be_visible()
    await expect(confirmation.locator(".answers")).to_have_text(f"Answers {bob}: “And the notes?”")
    # One candidate, so no numbered list: its button is Send, not "Send: 1".
    assert await confirmation.locator(".candidates").count() == 0
    await confirmation.get_by_role("button", name="Send", exact=True).click()
    await expect(page.locator("#status")).to_have_text("Sent.", timeout=ANSWERED)

    # A window, stopped.
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await set_level(api, people.ada, "send", "room", room["id"])
    await say(api, room, people.bob, "Thanks!", to=people.ada_id)
    window = page.locator("#pending > li[data-kind=window]")
    await expect(window).to_have_count(1, timeout=10_000)
    await expect(window.locator(".left")).to_contain_text("Sends in")
    await expect(window.locator(".answers")).to_have_text(f"Answers {bob}: “Thanks!”")
    await window.get_by_role("button", name="Stop").click()
    await expect(page.locator("#status")).to_have_text(
        "Stopped: nothing was sent.", timeout=ANSWERED
    )

    # An ask, approved.
    await ask_over_the_limit(api, people)
    ask = page.locator("#pending > li[data-kind=ask]")
    await expect(ask).to_have_count(1, timeout=10_000)
    await expect(ask.locator(".text")).to_contain_text("shop.buy 140 USD")
    await ask.get_by_role("button", name="Approve").click()
    await expect(page.locator("#status")).to_have_text(
        "Approved: your agent may go ahead.", timeout=ANSWERED
    )

    await expect(items).to_have_count(0, timeout=10_000)
    await expect(page.locator("#none")).to_be_visible()
    assert await pending(api, people.ada) == []
    sent = [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]
    assert len(sent) == 1 and sent[0]["drafted_by"] == f"agent:{people.ada_id}"


async def test_the_first_page_reads_by_screen_reader_and_keyboard_with_everything_waiting(
    api, operator, people, page
):
    """axe-core's checks, signed out and with each kind the person can act on waiting at
    once: before, no page had a main landmark, so a screen reader could not go to what
    waits past the heading and the links."""
    await accessible(page)
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    room, other = [await room_with(api, people, people.bob_id, title=t) for t in ("deck", "sync")]
    await say(api, room, people.bob, "Can you send the deck?", to=people.ada_id)
    await expect(page.locator("#pending > li[data-kind=draft]")).to_have_count(1, timeout=10_000)
    await set_level(api, people.ada, "confirm", "room", room["id"])
    await say(api, room, people.bob, "And the notes?", to=people.ada_id)
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await set_level(api, people.ada, "send", "room", other["id"])
    await say(api, other, people.bob, "Thanks!", to=people.ada_id)
    question = {"text": "Lunch on Friday?", "to": people.ada_id, "options": ["Yes", "No"]}
    asked = await api.post(f"/v1/rooms/{other['id']}/questions", json=question, headers=people.bob)
    assert asked.status == 201, await asked.text()
    await ask_over_the_limit(api, people)
    kinds = page.locator("#pending > li")
    await expect(kinds).to_have_count(5, timeout=10_000)
    assert sorted(await kinds.evaluate_all("items => items.map(i => i.dataset.kind)")) == [
        "ask", "confirmation", "draft", "question", "window"
    ]  # fmt: skip
    await accessible(page)


async def test_a_change_to_my_app_says_whether_it_goes_or_is_dropped_at_its_deadline(
    api, operator, people, page
):
    """A layer draft at draft waits for Keep and is dropped after a day; the page said
    "Goes in 1440 min unless you act." of it, as of one that commits itself."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    agent = bearer(token(org=people.org, user=people.ada_id, act=f"agent:{people.ada_id}",
                         roles=("mod:write",)))  # fmt: skip
    changes = page.locator("#pending > li[data-kind=layer_draft]")

    async def write(note: str) -> str:
        body = {"base": 0, "ops": [HIDE_BOARD], "note": note}
        wrote = await api.post("/v1/mod/layers/user", json=body, headers=agent)
        assert wrote.status == 202, await wrote.text()
        return (await wrote.json())["draft"]["id"]

    draft = await write("Hide the board")
    held = changes.filter(has_text="Hide the board")
    await expect(held.locator(".left")).to_have_text(
        "Dropped in 24 h unless you keep it.", timeout=10_000
    )
    # Its ops are listed one by one on the layout page, which the item leads to: to it.
    link = held.locator(".see a")
    await expect(link).to_have_attribute("href", f"/console/layout#draft-{draft}")
    await page.set_viewport_size({"width": 390, "height": 600})
    await link.click()
    there = page.locator(f"#draft-{draft}")
    await expect(there.get_by_role("button", name="Keep")).to_be_in_viewport(timeout=ANSWERED)
    await page.go_back()
    await page.set_viewport_size({"width": 1280, "height": 720})
    # At send with an hour's window, the next commits itself at the window's end.
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    await set_level(api, people.ada, "send")
    await write("Hide the board, at send")
    goes = changes.filter(has_text="Hide the board, at send")
    await expect(goes.locator(".left")).to_have_text(
        re.compile(r"Goes in \d+ min unless you act\."), timeout=10_000
    )


async def test_an_org_draft_on_the_first_page_leads_its_admin_to_it(api, people, page):
    """An agent's draft of the org's layer waits on its admins' first page, which led
    nowhere for it: it leads to the layout page, drawn for the org's layer, at the draft."""
    root = f"{people.org}/root"
    agent = bearer(token(org=people.org, user=root, act=f"agent:{root}",
                         roles=("admin", "mod:write")))  # fmt: skip
    body = {"base": 0, "ops": [HIDE_BOARD], "note": "No one opens the board"}
    wrote = await api.post("/v1/mod/layers/org", json=body, headers=agent)
    assert wrote.status == 202, await wrote.text()
    draft = (await wrote.json())["draft"]["id"]
    await sign_in(page, people, root, roles=("admin",))
    held = page.locator("#pending > li[data-kind=layer_draft]")
    link = held.get_by_role("link", name="See each change on how my org's app is arranged")
    await expect(link).to_have_attribute("href", f"/console/layout#draft-{draft}", timeout=ANSWERED)
    await page.set_viewport_size({"width": 390, "height": 600})
    await link.click()
    await expect(page.locator("#layer")).to_have_value("org")
    there = page.locator(f"#draft-{draft}")
    await expect(there.get_by_role("button", name="Keep")).to_be_in_viewport(timeout=ANSWERED)


async def test_a_question_asked_of_the_person_is_answered_from_the_first_page(api, people, page):
    """Before, what a colleague asked waited in its room alone, which the console does
    not show: the first page said nothing waited."""
    await sign_in(page, people)
    await expect(page.locator("#none")).to_be_visible()
    room = await room_with(api, people, people.bob_id)
    body = {"text": "Lunch on Friday or Monday?\nThe usual place.", "to": people.ada_id}
    asked = await api.post(
        f"/v1/rooms/{room['id']}/questions", json=body | {"options": ["Friday", "Monday"]},
        headers=people.bob,
    )  # fmt: skip
    assert asked.status == 201, await asked.text()
    question = page.locator("#pending > li[data-kind=question]")
    await expect(question.locator(".kind")).to_have_text("Asked of me", timeout=10_000)
    await expect(question.locator(".answers")).to_have_text(f"From {people.bob_id.split('/')[1]}")
    await expect(question.locator(".text")).to_contain_text("Lunch on Friday or Monday?")
    # Its lines as it was written (a Chonk's proposal is paragraphs and receipts).
    said = await question.locator(".text").inner_text()
    assert said == "Lunch on Friday or Monday?\nThe usual place."
    await expect(question.locator("textarea")).to_have_value("")  # an answer is hers to write
    await question.get_by_role("button", name="Monday").click()
    await expect(page.locator("#status")).to_have_text("Answered.", timeout=ANSWERED)
    await expect(question).to_have_count(0)
    (answer,) = [m for m in await history(api, room, people.bob) if m.get("answers")]
    assert (answer["author"], answer["text"]) == (people.ada_id, "Monday")


async def test_a_person_says_how_their_agent_writes_and_its_next_draft_does(
    api, operator, people, page
):
    """HIP-0524 §12: the agent is configured under the person's preferences, who it is
    among them; the console showed neither, only what it may send."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#persona")).to_contain_text("Its persona is “self”.")
    await page.fill("#pref-tone", "warm")
    await page.fill("#pref-signature", "— Ada")
    await page.get_by_role("button", name="Save my preferences").click()
    await expect(page.locator("#status")).to_have_text(
        "Saved: your agent drafts with these from its next reply.", timeout=ANSWERED
    )
    kept = await (await api.get("/v1/preferences", headers=people.ada)).json()
    assert (kept["tone"], kept["signature"], kept["display_name"]) == ("warm", "— Ada", "")

    room = await room_with(api, people, people.bob_id)
    # Writing in a preference holds back no waiting item (only writing in an item does).
    await page.click("#pref-instructions")
    await say(api, room, people.bob, "Lunch on Friday?", to=people.ada_id)
    draft = page.locator("#pending > li[data-kind=draft]")
    await expect(draft.locator(".text")).to_contain_text("— Ada", timeout=10_000)


async def test_a_person_without_an_agent_makes_it_from_the_console(api, people, page):
    await sign_in(page, people)
    await expect(page.locator("#no-agent")).to_contain_text("You have no agent yet.")
    await expect(page.locator("#preferences")).to_be_hidden()
    # The org's library to choose from, the person's own first.
    personas = page.locator("#make-persona option")
    await expect(personas.first).to_have_attribute("value", "self")
    await expect(personas).to_have_count(6)  # the platform's presets
    await page.select_option("#make-persona", "des")
    await page.get_by_role("button", name="Make my agent").click()
    await expect(page.locator("#persona")).to_contain_text("“des”", timeout=ANSWERED)
    await expect(page.locator("#preferences")).to_be_visible()
    mine = await api.get("/v1/agents/me", headers=people.ada)
    assert mine.status == 200 and (await mine.json())["agent"]["persona"] == "des"


async def test_a_person_connects_proves_and_disconnects_a_line_from_the_console(
    api, operator, people, page
):
    """§12: the lines the agent answers on are configured with the rest; the console only
    listed what had left by them."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#no-lines")).to_be_visible()
    # Where a call rings is asked of a line for calls alone.
    await expect(page.locator("#line-forward")).to_be_hidden()
    await page.select_option("#line-transport", "voice")
    await expect(page.locator("#line-forward")).to_be_visible()
    number = fresh_number()
    await page.select_option("#line-transport", "sms")
    await page.fill("#line-address", number)
    await page.fill("#line-credential", LINE_SECRET)
    await page.get_by_role("button", name="Connect it").click()
    await expect(page.locator("#status")).to_have_text(
        f"A code was sent to {number}: enter it above.", timeout=ANSWERED
    )
    line = page.locator("#lines li[data-transport=sms]")
    await expect(line).to_contain_text(f"SMS {number}: waiting for the code sent to it")
    await expect(page.locator("#line-credential")).to_have_value("")  # kept nowhere here
    await line.get_by_label("the code").fill(await code_sent(operator, "sms", people.org, number))
    await line.get_by_role("button", name="Prove it").click()
    await expect(page.locator("#status")).to_have_text("Connected.", timeout=ANSWERED)
    await expect(line).to_contain_text(f"SMS {number}: connected")
    (listed,) = (await (await api.get("/v1/lines", headers=people.ada)).json())["lines"]
    assert (listed["address"], listed["state"]) == (number, "connected")

    await line.get_by_role("button", name="Disconnect").click()
    await expect(page.locator("#status")).to_have_text("Disconnected.", timeout=ANSWERED)
    await expect(page.locator("#no-lines")).to_be_visible()
    assert (await (await api.get("/v1/lines", headers=people.ada)).json())["lines"] == []


async def test_what_a_person_is_choosing_in_a_room_outlives_a_change_made_elsewhere(
    api, page, people
):
    """The rooms are drawn again when the ladder changes on another device; the level a
    person had chosen in a room, and their "I understand", stay as they left them."""
    team = await room_with(api, people, people.bob_id, title="team")
    await room_with(api, people, people.bob_id, title="lunch")
    await sign_in(page, people)
    room = page.locator(f"#rooms li[data-room={team['id']}]")
    await room.get_by_label("my agent's level in team").select_option("send")
    await room.get_by_label("I understand, and I choose send in this room.").check()
    await set_level(api, people.ada, "confirm")  # elsewhere: every room is drawn again
    lunch = page.locator("#rooms li").filter(has_text="lunch").locator(".applies")
    await expect(lunch).to_have_text("lunch: confirm (my level everywhere)", timeout=ANSWERED)
    await expect(room.get_by_label("my agent's level in team")).to_have_value("send")
    await expect(room.get_by_label("I understand, and I choose send in this room.")).to_be_checked()
    await expect(room.get_by_role("button", name="Save for this room")).to_be_enabled()


async def test_an_org_admin_sets_and_lifts_the_org_s_ceiling_from_the_console(
    api, operator, people, page
):
    """§4: the org's admin sets a ceiling no member's agent sends above; the console
    showed it and offered no way to set it."""
    await announce(operator, f"{people.org}/root")
    await sign_in(page, people, f"{people.org}/root", roles=("admin",))
    await page.select_option("#ceiling-level", "confirm")
    await page.get_by_role("button", name="Set my org's ceiling").click()
    await expect(page.locator("#status")).to_have_text(
        "Ceiling set: no agent of the org sends above confirm.", timeout=ANSWERED
    )
    await expect(page.locator("#ceiling")).to_have_text("Your org allows at most: confirm.")
    held = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert held["ceiling"] == "confirm"  # for every member
    await page.select_option("#ceiling-level", "")
    await page.get_by_role("button", name="Set my org's ceiling").click()
    await expect(page.locator("#status")).to_have_text("Ceiling lifted.", timeout=ANSWERED)
    await expect(page.locator("#ceiling")).to_be_hidden()
    assert (await (await api.get("/v1/ladder", headers=people.ada)).json())["ceiling"] is None


async def test_a_member_is_offered_no_ceiling_to_set(api, operator, people, page):
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#levels")).to_be_visible()
    await expect(page.locator("#org-ceiling")).to_be_hidden()


async def test_each_console_page_leads_to_the_others_and_the_person_stays_signed_in(
    api, operator, people, page
):
    """The first page led nowhere: a person found the layout and knows pages only by
    their addresses."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#none")).to_be_visible()
    await page.get_by_role("link", name="How my app is arranged").click()
    await expect(page.locator("#rail li").first).to_be_visible()  # no second sign-in
    assert await led_to(page) == ["/console", "/console/knows"]
    await page.get_by_role("link", name="What waits on me").click()
    await expect(page.locator("#none")).to_be_visible()
    assert await led_to(page) == ["/console/layout", "/console/knows"]


async def test_the_layout_page_leads_to_the_ladder_itself_however_late_it_is_drawn(
    api, operator, people, page
):
    """The person's level and window are their ladder's: the layout page links to the
    ladder on the first page, which a browser could not scroll to while the page drew it
    (hidden until signed in, here a second late), leaving a phone at the page's top."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await page.get_by_role("link", name="How my app is arranged").click()
    await page.set_viewport_size({"width": 390, "height": 600})

    async def late(route: Route) -> None:
        await asyncio.sleep(1)
        await route.continue_()

    await page.route("**/v1/ladder", late)
    await page.get_by_role("link", name="set with my ladder").first.click()
    ladder = page.get_by_role("heading", name="What my agent may send without me")
    await expect(ladder).to_be_in_viewport(timeout=ANSWERED)


@pytest.mark.parametrize("path", ["/console", "/console/layout"])  # knows: tests/chonk
async def test_enter_in_the_token_box_signs_in_and_sends_the_token_nowhere(
    api, operator, people, path
):
    """A person pastes their token and presses Enter, as at any sign-in: each page signs
    in (before, only a click on Sign in did), and the page stays where it was, the token in
    no address."""
    await announce(operator, people.ada_id)
    url = str(api.make_url(path))
    async with browser_page(url) as page:
        await page.fill("#token", token(org=people.org, user=people.ada_id))
        await page.press("#token", "Enter")
        await expect(page.locator("#signin")).to_be_hidden(timeout=ANSWERED)
        assert page.url == url


async def test_the_page_says_when_more_wait_than_it_lists(api, operator, people, page):
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#none")).to_be_visible()
    await expect(page.locator("#more")).to_be_hidden()
    await large_asks(api, people)
    await expect(page.locator("#pending > li[data-kind=ask]").first).to_be_visible()
    await expect(page.locator("#more")).to_be_visible()


async def test_a_token_refused_is_not_sent_again_until_another_is_pasted(
    api, operator, people, page
):
    await announce(operator, people.ada_id)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    await page.fill("#token", expiring(people.org, people.ada_id, 6))
    await page.click("#use")
    await expect(page.locator("#none")).to_be_visible()
    refused = "Your token is no longer taken: paste a new one."
    await expect(page.locator("#status")).to_have_text(refused, timeout=15_000)
    await expect(page.locator("#signin")).to_be_visible()

    # Nothing is asked with it again: over three of the page's own rounds (each asked for
    # the recent sends once a second), and its streams' retries, it waits for a new token.
    asked.clear()
    rounds = await page.evaluate("ticks")

    async def three_rounds_on() -> bool:  # polled from here: the page's policy allows no eval
        return await page.evaluate("ticks") >= rounds + 3

    await eventually(three_rounds_on)
    assert [url for url in asked if "/v1/" in url] == []

    await sign_in(page, people)
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Still there?", to=people.ada_id)
    draft = page.locator("#pending > li[data-kind=draft]")
    await expect(draft).to_have_count(1, timeout=10_000)  # the list is live again


async def test_a_person_sets_their_level_and_window_and_stops_and_edits_pending_sends(
    api, operator, people, page
):
    await announce(operator, people.ada_id)
    await sign_in(page, people)
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

    await expect(page.locator("#none-closed")).to_be_visible()
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Can you resend the invoice?", to=people.ada_id)
    item = page.locator("#pending > li[data-kind=window]")
    await expect(item).to_have_count(1, timeout=10_000)
    await expect(item.locator(".left")).to_contain_text("Sends in")
    await item.get_by_role("button", name="Stop").click()
    await expect(page.locator("#status")).to_have_text(
        "Stopped: nothing was sent.", timeout=ANSWERED
    )
    assert await _pending(api, people) == []
    stopped = page.locator("#closed li[data-state=stopped]")
    await expect(stopped).to_contain_text("You stopped it: nothing was sent.", timeout=10_000)
    await expect(page.locator("#none-closed")).to_be_hidden()
    await stopped.evaluate("item => { item.kept = true; }")

    await say(api, room, people.bob, "And the receipt?", to=people.ada_id)
    await expect(item).to_have_count(1, timeout=10_000)
    await item.locator("textarea").fill("Both are attached now. Ada")
    await item.get_by_role("button", name="Send my version instead").click()
    await expect(page.locator("#status")).to_have_text("Sent your version instead.")

    async def mine_sent():
        return [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]

    [sent] = await eventually(mine_sent)
    assert (sent["text"], sent["author_kind"]) == ("Both are attached now. Ada", "human")
    # The closed are read again every second: the first is the element it was once the
    # second closed (before, every item was replaced at each read).
    await expect(page.locator("#closed li")).to_have_count(2, timeout=10_000)
    assert await stopped.evaluate("item => item.kept === true")
    assert not [
        m
        for m in await history(api, room, people.bob)
        if m["author_kind"] == "agent" and not m.get("notice")
    ]


async def _a_send_waiting(api, operator, people, page):
    """Ada signed in, her level send with a 1m window, and Bob's message waiting out its
    window: the room, the page's windows, and that one."""
    await announce(operator, people.ada_id)
    await set_level(api, people.ada, "send")
    await api.put("/v1/ladder/window", json={"window": "1m"}, headers=people.ada)
    await sign_in(page, people)
    room = await room_with(api, people, people.bob_id)
    await say(api, room, people.bob, "Can you resend the invoice?", to=people.ada_id)
    windows = page.locator("#pending > li[data-kind=window]")
    await expect(windows).to_have_count(1, timeout=10_000)
    first = page.locator(f'#pending > li[data-id="{await windows.get_attribute("data-id")}"]')
    return room, windows, first


async def test_what_a_person_wrote_in_a_pending_send_outlives_the_list_changing(
    api, operator, people, page
):
    """Ada edits a pending send's text and clicks away, not sending it yet; another send
    arrives and the list is drawn again. Her words are still there, and are what is sent."""
    room, windows, first = await _a_send_waiting(api, operator, people, page)
    await first.locator("textarea").fill("Attached again. Ada")
    await page.locator("h1").click()  # away from what she wrote

    await say(api, room, people.bob, "And the receipt?", to=people.ada_id)
    await expect(windows).to_have_count(2, timeout=10_000)
    await expect(first.locator("textarea")).to_have_value("Attached again. Ada")
    await first.get_by_role("button", name="Send my version instead").click()
    await expect(page.locator("#status")).to_have_text("Sent your version instead.")

    async def mine_sent():
        return [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]

    [sent] = await eventually(mine_sent)
    assert sent["text"] == "Attached again. Ada"


async def test_a_send_waiting_is_left_as_it_is_when_another_arrives(api, operator, people, page):
    """Every item was drawn anew when the list changed: a Stop pressed on a window as
    another send arrived was pressed on a button taken away, and the click was lost (the
    send went). An item that has not changed is the same element, where it was."""
    room, windows, first = await _a_send_waiting(api, operator, people, page)
    stop = first.get_by_role("button", name="Stop")
    await stop.evaluate("button => { button.kept = true; }")

    await say(api, room, people.bob, "And the receipt?", to=people.ada_id)
    await expect(windows).to_have_count(2, timeout=10_000)
    assert await stop.evaluate("button => button.kept === true")
    await stop.click()
    await expect(page.locator("#status")).to_have_text("Stopped: nothing was sent.")
    await expect(windows).to_have_count(1)


async def test_a_window_chosen_while_the_level_saves_is_the_window_saved(
    api, operator, people, page
):
    """Saving the level read the whole ladder again and drew both forms from it: a window
    chosen while that read was on its way was put back to the saved one, and `Save window`
    then saved that (seen on a busy machine). Here every read of the ladder after sign-in
    answers only once the window is chosen, with the ladder as it stood when asked."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("input[value=draft]")).to_be_checked()
    chosen = asyncio.Event()

    async def answer_once_chosen(route: Route) -> None:
        if route.request.method != "GET":
            await route.continue_()
            return
        response = await route.fetch()
        await chosen.wait()
        await route.fulfill(response=response)

    await page.route("**/v1/ladder", answer_once_chosen)
    await page.check("input[value=confirm]")
    await page.click("#save-level")
    await expect(page.locator("#status")).to_have_text("Saved: confirm.")
    await page.select_option("#window", "1m")
    chosen.set()
    await expect(page.locator("#ladder")).not_to_have_attribute("aria-busy", "true")
    await page.click("#save-window")

    await expect(page.locator("#status")).to_have_text("Saved: window 1m.")
    await expect(page.locator("#window")).to_have_value("1m")
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert (mine["settings"]["default"], mine["settings"]["window"]) == ("confirm", "1m")


async def test_lowering_in_the_console_needs_no_confirmation(api, page, people):
    await api.put(
        "/v1/ladder", json={"level": "send", "acknowledge": SEND_MEANS}, headers=people.ada
    )
    await sign_in(page, people)
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
    await sign_in(page, people)
    rooms = page.locator("#rooms li")
    await expect(rooms).to_have_count(2)
    await expect(page.locator(f"#rooms li[data-room={team['id']}] .applies")).to_have_text(
        "team: confirm (set for this room)"
    )
    await expect(rooms.filter(has_text="lunch").locator(".applies")).to_have_text(
        "lunch: draft (my level everywhere)"
    )


async def test_a_person_in_more_rooms_than_a_page_holds_sets_a_level_in_each(api, page, people):
    """The first page read one page of the person's rooms (50): in a fifty-first, no level
    could be set, a waiting item was not named by its room, and a line's room past the page
    was not among what left by the lines."""
    made = await asyncio.gather(
        *(room_with(api, people, people.bob_id, title=f"room {i:02}") for i in range(51))
    )
    await sign_in(page, people)
    await expect(page.locator("#rooms li")).to_have_count(51)
    last = max(made, key=lambda room: room["id"])  # listed by id: past the first page
    await expect(page.locator(f"#rooms li[data-room={last['id']}] .applies")).to_have_text(
        f"{last['title']}: draft (my level everywhere)"
    )


async def test_a_person_whose_agent_answers_in_no_room_is_told_so(api, page, people):
    """The rooms' list drew nothing under its heading for a person in none."""
    await sign_in(page, people)
    await expect(page.locator("#no-rooms")).to_be_visible()
    await room_with(api, people, people.bob_id, title="team")
    await page.reload()
    await expect(page.locator("#rooms li")).to_have_count(1)
    await expect(page.locator("#no-rooms")).to_be_hidden()


async def test_a_room_the_persons_agent_is_not_in_offers_no_level(api, page, people, connect):
    """A manager agent's room with the person holds no agent of theirs: a level set there
    governed nothing, and the console offered one."""
    team = await room_with(api, people, people.bob_id, title="team")
    tell = rooms.Tell(
        org=people.org, person=people.ada_id, bot="chonk-ops", title="Chief Operating Orca",
        text="The late shift is covered.", key="covered",
    )  # fmt: skip
    async with connect("chonk") as nc:
        await call(nc, rooms.TELL, tell, caller="chonk")
    await sign_in(page, people)
    await expect(page.locator(f"#rooms li[data-room={team['id']}]")).to_have_count(1)
    await expect(page.locator("#rooms li")).to_have_count(1)


async def test_a_person_sets_and_unsets_a_room_s_own_level_from_the_console(api, page, people):
    """§8: a level applies everywhere unless a room or a line says otherwise; the console
    showed a room's override and offered no way to set one."""
    team = await room_with(api, people, people.bob_id, title="team")
    await sign_in(page, people)
    room = page.locator(f"#rooms li[data-room={team['id']}]")
    level = room.get_by_label("my agent's level in team")
    await level.select_option("confirm")
    await room.get_by_role("button", name="Save for this room").click()
    await expect(page.locator("#status")).to_have_text("Saved: confirm in team.", timeout=ANSWERED)
    await expect(room.locator(".applies")).to_have_text("team: confirm (set for this room)")

    # Raising a room to send states what it means and needs "I understand".
    await level.select_option("send")
    await expect(room.locator(".warning")).to_contain_text(SEND_MEANS)
    save = room.get_by_role("button", name="Save for this room")
    await expect(save).to_be_disabled()
    await room.get_by_label("I understand, and I choose send in this room.").check()
    await save.click()
    await expect(page.locator("#status")).to_have_text("Saved: send in team.", timeout=ANSWERED)
    held = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert held["settings"]["rooms"] == {team["id"]: "send"}
    assert held["settings"]["default"] == "draft"  # nowhere else

    await level.select_option("")
    await room.get_by_role("button", name="Save for this room").click()
    await expect(page.locator("#status")).to_have_text(
        "Saved: my level everywhere in team.", timeout=ANSWERED
    )
    await expect(room.locator(".applies")).to_have_text("team: draft (my level everywhere)")
    held = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert held["settings"]["rooms"] == {}


async def test_what_changed_elsewhere_shows_and_what_the_person_is_choosing_stays(
    api, page, people
):
    """The page reads the ladder again while it is open: the level Ada saved on another
    device and the ceiling her org's admin set show there, and the window she has picked
    but not yet saved stays picked, and is what `Save window` saves."""
    await sign_in(page, people)
    await expect(page.locator("input[value=draft]")).to_be_checked()
    await page.select_option("#window", "1h")

    elsewhere = await api.put("/v1/ladder", json={"level": "confirm"}, headers=people.ada)
    assert elsewhere.status == 200, await elsewhere.text()
    ceiling = await api.put("/v1/ladder/ceiling", json={"level": "confirm"}, headers=people.root)
    assert ceiling.status == 200, await ceiling.text()

    await expect(page.locator("input[value=confirm]")).to_be_checked(timeout=15_000)
    await expect(page.locator("#ceiling")).to_have_text("Your org allows at most: confirm.")
    await expect(page.locator("#window")).to_have_value("1h")
    await page.click("#save-window")
    await expect(page.locator("#status")).to_have_text("Saved: window 1h.")
    mine = await (await api.get("/v1/ladder", headers=people.ada)).json()
    assert (mine["settings"]["default"], mine["settings"]["window"]) == ("confirm", "1h")


async def test_a_click_whose_answer_was_lost_is_asked_again_and_carried_out_once(
    api, operator, people, page
):
    """Ada's edit of a pending send is carried out, and its answer lost on the way back
    (504); asked again, the gateway is away for a moment (503). Before, the page said the
    504 and her click was done with; clicked again, it was refused as already sent. Now
    the page asks again with the same Idempotency-Key, and is answered as it was."""
    await announce(operator, people.ada_id)
    await sign_in(page, people)
    await expect(page.locator("#none")).to_be_visible()
    await api.put("/v1/ladder/window", json={"window": "1h"}, headers=people.ada)
    room = await room_with(api, people, people.bob_id)
    await set_level(api, people.ada, "send", "room", room["id"])
    await say(api, room, people.bob, "Can you resend the invoice?", to=people.ada_id)
    item = page.locator("#pending > li[data-kind=window]")
    await expect(item).to_have_count(1, timeout=10_000)

    keys: list[str | None] = []

    async def lose_the_first_answers(route: Route) -> None:
        keys.append(route.request.headers.get("idempotency-key"))
        if len(keys) == 1:
            await route.fetch()
            timeout = {"type": "urn:tether:problem:timeout", "status": 504, "title": "timeout"}
            await route.fulfill(status=504, json=timeout)
        elif len(keys) == 2:
            away = {"type": "urn:tether:problem:bus-unavailable", "status": 503, "title": "away"}
            await route.fulfill(status=503, json=away)
        else:
            await route.continue_()

    await page.route("**/v1/windows/*/edit", lose_the_first_answers)
    await item.locator("textarea").fill("Both are attached now. Ada")
    await item.get_by_role("button", name="Send my version instead").click()
    await expect(page.locator("#status")).to_have_text("Sent your version instead.")
    assert len(keys) == 3 and keys[0] and set(keys) == {keys[0]}

    async def mine_sent():
        return [m for m in await history(api, room, people.bob) if m["author"] == people.ada_id]

    [sent] = await eventually(mine_sent)
    assert sent["text"] == "Both are attached now. Ada"
    windows = await (await api.get("/v1/windows", headers=people.ada)).json()
    assert [w["state"] for w in windows["closed"]] == ["edited"]


async def test_the_console_runs_only_its_own_scripts_and_is_framed_by_no_one(api, people, page):
    """A person pastes their token here. The page's policy runs its own inline script and
    style (by hash) and console.js, nothing injected, and lets no page frame it."""
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else None)
    await page.reload()
    await sign_in(page, people)
    await expect(page.locator("#ladder")).to_be_visible()
    assert refused == []  # its own scripts ran, and it works

    await page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.injected = true'; document.body.append(s); }"
    )
    assert await page.evaluate("window.injected === undefined")
    assert len(refused) == 1

    for path in ("/console", "/console/layout", "/console/knows"):
        served = await api.get(path)
        policy = served.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in policy and "unsafe" not in policy, path
        assert served.headers["X-Content-Type-Options"] == "nosniff", path


async def test_a_packet_is_decided_from_the_first_page(api, page):
    """Before, a HUMAN_ONLY packet reached its decider through the API alone."""
    await ana_asks_for_a_packet(api, "Can I be promoted?")
    await page.fill("#token", token(org=SIM, user=f"{SIM}/tomas"))
    await page.click("#use")
    packet = page.locator("#pending > li[data-kind=packet]", has_text="A question about promotion")
    await expect(packet.locator(".kind")).to_have_text("Mine to decide", timeout=ANSWERED)
    await expect(packet.locator(".text")).to_contain_text("recommends nothing")
    await accessible(page)
    await packet.get_by_role("button", name="I've decided").click()
    await expect(page.locator("#status")).to_have_text("Marked decided: it leaves your list.")
    await expect(packet).to_have_count(0)
