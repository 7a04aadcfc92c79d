"""The console's knows page, in headless Chromium: Ana reads what the manager agents keep
about her and who read it for what, redacts a preference and answers her feedback."""

import re

import pytest
from playwright.async_api import expect

from tests.chonk.conftest import ORG
from tests.chonk.test_ec_mgr_008_voice import speaking
from tests.support import accessible, bearer, browser_page, led_to, token


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console/knows"))) as page:
        yield page


async def test_a_person_reads_what_is_kept_about_them_redacts_and_answers(api, page):
    root = bearer(token(org=ORG, user=f"{ORG}/priya", roles=("admin",)))
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=root)
    assert r.status == 201, await r.text()
    await page.fill("#token", token(org=ORG, user=f"{ORG}/ana"))
    await page.click("#use")
    # Each Chonk by its title, and who may see a fact in words (§6.4's "read by Chief
    # Build Officer"): the page once said "Read by human", "visible to self_mor".
    await expect(page.locator("#reads li").first).to_contain_text("Read by Chief Human Officer")
    await expect(page.locator("#reads li").first).to_contain_text("for a check-in")
    # She starts her answer, redacts another fact before sending it, and her words are
    # still there to send (the page once drew every fact again after each act).
    feedback = page.locator("#facts li[data-fact=mem_ana_feedback_1]")
    await expect(feedback.locator(".what")).to_contain_text("Feedback given: Praise")
    await expect(feedback.locator(".how")).to_contain_text(
        "Kept by Chief Human Officer, visible to you and your manager of record"
    )
    brief = page.locator("#facts li[data-fact=mem_ana_pref_brief]")
    await expect(brief.locator(".how")).to_contain_text("used for brief timing")  # not brief_timing
    await accessible(page)  # each fact with its reads and the means to redact or answer it
    await feedback.locator("textarea").fill("Those PRs were a hotfix week.")
    signal = page.locator("#facts li[data-fact=mem_run_checkin_ana_0908_signal]")
    await expect(signal.locator(".what")).to_contain_text("Wednesday meeting hours 6.0")
    await signal.get_by_role("button", name="Redact").click()
    await expect(page.locator("#status")).to_have_text("Redacted.")
    await expect(signal.locator(".what")).to_have_text("Signal: redacted")
    await accessible(page)  # a fact redacted, as it reads now
    await expect(feedback.locator("textarea")).to_have_value("Those PRs were a hotfix week.")
    await feedback.get_by_role("button", name="Answer it").click()
    await expect(page.locator("#status")).to_have_text("Your answer is kept with it.")
    await expect(feedback.locator(".how")).to_contain_text("Those PRs were a hotfix week.")


async def test_a_person_nothing_is_kept_about_is_told_so_of_both_and_led_on(api, page):
    await page.fill("#token", token(org=ORG, user=f"{ORG}/nobody"))
    await page.click("#use")
    await expect(page.locator("#no-facts")).to_have_text("Nothing is kept about you.")
    await expect(page.locator("#no-reads")).to_have_text("No manager has read anything about you.")
    assert await led_to(page) == ["/console", "/console/layout"]


async def test_a_read_that_found_nothing_kept_says_so_not_0_facts(api, page):
    """The Chief Human Officer's compensation packet about Lena reads what is kept about
    her: nothing. The page listed that read as "0 facts"."""
    root = bearer(token(org=ORG, user=f"{ORG}/priya", roles=("admin",)))
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "packet_lena"}, headers=root)
    assert r.status == 201, await r.text()
    await page.fill("#token", token(org=ORG, user=f"{ORG}/lena"))
    await page.click("#use")
    await expect(page.locator("#reads li").first).to_have_text(  # other tests read her too
        re.compile(r"^Read by Chief Human Officer on \d{4}-\d\d-\d\d for a compensation "
                   r"packet: nothing was kept about you then$")
    )  # fmt: skip


async def test_enter_in_the_token_box_signs_in_and_sends_the_token_nowhere(api, page):
    """Enter in the token's box signs in, as a click on Sign in does (before, it did
    nothing), and the page stays where it was, the token in no address."""
    at = page.url
    await page.fill("#token", token(org=ORG, user=f"{ORG}/ana"))
    await page.press("#token", "Enter")
    await expect(page.locator("#knows")).to_be_visible()
    await expect(page.locator("#signin")).to_be_hidden()
    assert page.url == at


async def test_a_person_tells_a_manager_agent_that_what_it_said_is_not_so(api, page):
    """Before, a person could write to a Chonk through the API alone."""
    root = bearer(token(org=ORG, user=f"{ORG}/priya", roles=("admin",)))
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=root)
    assert r.status == 201, await r.text()
    (told,) = (await r.json())["delivered"]
    await page.fill("#token", token(org=ORG, user=f"{ORG}/ana"))
    await page.click("#use")
    await page.select_option("#chonk", label="Chief Human Officer")
    await page.fill("#words", "That is not true: I was in the review all week.")
    await page.click("#send")
    await expect(page.locator("#status")).to_have_text(
        "Chief Human Officer showed you, in your thread with it, what it told you was based "
        "on, and offers to correct it."
    )
    ana = bearer(token(org=ORG, user=f"{ORG}/ana"))
    thread = await (await api.get(f"/v1/rooms/{told['room']}/messages", headers=ana)).json()
    assert "Tell me what is wrong" in thread["messages"][-1]["text"]


async def test_a_person_asks_a_manager_agent_for_a_raise_and_is_told_who_decides(api, page):
    """Before, the page said the Chonk read nothing in it."""
    await page.fill("#token", token(org=ORG, user=f"{ORG}/ana"))
    await page.click("#use")
    await page.select_option("#chonk", label="Chief Build Officer")
    await page.fill("#words", "Can I get a raise this year?")
    await page.click("#send")
    await expect(page.locator("#status")).to_have_text(
        "Chief Build Officer told you, in your thread with it, who decides this. The Chief "
        "Human Officer asks you, in your thread with it, whether you'd like a packet prepared."
    )
    # The thread is on the page: before, the console showed no room, and "in your thread
    # with it" led nowhere.
    heading = page.get_by_role("heading", name="Chief Build Officer", exact=True)
    build = page.locator("#threads .with", has=heading)
    await expect(build.locator("li").last).to_contain_text(
        "Chief Build Officer, 20"  # its title and when
    )
    await expect(build.locator("li").last).to_contain_text("a person decides it: Tomás")
    await build.evaluate("thread => { thread.kept = true; }")
    # The Chief Human Officer's question comes after the handoff: the threads are read
    # again while the page is open.
    heading = page.get_by_role("heading", name="Chief Human Officer", exact=True)
    human = page.locator("#threads .with", has=heading)
    await expect(human.locator("li").last).to_contain_text(
        "You asked about compensation, which Tomás decides.", timeout=15_000
    )
    # It is answered where what waits on her is, and the page leads there.
    answer = human.locator("li").last.locator("a.answer")
    await expect(answer).to_have_text("Answer it with what waits on me")
    await expect(answer).to_have_attribute("href", "/console")
    # Answered (here through the API, as the first page does), it leads there no more.
    room = await human.get_attribute("data-room")
    ana = bearer(token(org=ORG, user=f"{ORG}/ana"))
    said = await (await api.get(f"/v1/rooms/{room}/messages?limit=200", headers=ana)).json()
    asked = [m for m in said["messages"] if m.get("question")][-1]
    no = {"choice": {"type": "pick", "option": 1}}
    path = f"/v1/rooms/{room}/questions/{asked['seq']}/answer"
    assert (await api.post(path, json=no, headers=ana)).status == 201
    said = human.locator("li")
    await expect(said.last).to_contain_text("Me, ", timeout=15_000)
    asked_there = said.nth(await said.count() - 2)  # the question, just before its answer
    await expect(asked_there).to_contain_text("You asked about compensation")
    await expect(asked_there.locator("a.answer")).to_have_count(0)
    # Read again every five seconds, a thread that did not change is left as it is: drawn
    # anew, a link clicked in it as it was replaced did nothing, its words selected lost.
    assert await build.evaluate("thread => thread.kept === true")


async def test_a_person_asks_the_chief_human_officer_to_remember_and_sees_it_kept(api, page):
    """§10's "say 'remember'": kept in her words, and shown with what is known of her."""
    await page.fill("#token", token(org=ORG, user=f"{ORG}/ana"))
    await page.click("#use")
    await page.select_option("#chonk", label="Chief Human Officer")
    words = "remember, I'm out Sept 10-20 for a family thing"
    await page.fill("#words", words)
    await page.click("#send")
    await expect(page.locator("#status")).to_have_text(
        "Chief Human Officer kept it, in your words: it is with what is known about you, above."
    )
    await expect(page.locator("#facts")).to_contain_text(words)


async def test_a_person_writes_to_a_chonk_by_the_name_their_org_gave_it(api, page):
    async with speaking(api, {"tone": {"default": 0.7}, "chonks": {"human": {"name": "Hedda"}}}):
        await page.fill("#token", token(org=ORG, user=f"{ORG}/ana"))
        await page.click("#use")
        hedda = page.locator("#chonk option[value=human]")
        await expect(hedda).to_have_text("Hedda (Chief Human Officer)")
        await expect(page.locator("#chonk option[value=fin]")).to_have_text("Chief Fin Officer")
