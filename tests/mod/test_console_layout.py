"""The console's page for a person's own layer, in headless Chromium (Debian's, driven by
Playwright): the composed rail, the agent's draft with Keep and Discard and the time left,
versions with revert, redrawn as the watch stream reports changes."""

import asyncio
import re

import pytest
from playwright.async_api import Route, expect

from tests.mod.conftest import HIDE_BOARD, install, write
from tests.mod.test_mod_bounds import crowded, renamed
from tests.personal.conftest import eventually
from tests.support import accessible, browser_page, token


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console/layout"))) as page:
        yield page


async def test_a_person_keeps_their_agent_s_draft_and_reverts_it_in_the_console(api, people, page):
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    rail = page.locator("#rail li")
    await expect(rail).to_have_count(15)
    await expect(page.locator("#no-drafts")).to_be_visible()

    written = await write(api, people.agent, "user", [HIDE_BOARD], note="You never open it")
    draft = (await written.json())["draft"]
    item = page.locator(f"#drafts li[data-draft={draft['id']}]")
    await expect(item.locator(".what")).to_contain_text("1 change by your agent: hide")
    await expect(item.locator(".what")).to_contain_text("hide Board")  # by its title
    await expect(item.locator(".note")).to_have_text("Note: “You never open it”")  # its why
    await expect(item.locator(".left")).to_contain_text("Waits for your Keep")
    await expect(item.locator(".left")).to_contain_text("Expires in 24 h")
    await accessible(page)  # the rail, the settings, a draft to keep or discard
    await item.get_by_role("button", name="Keep").click()
    await expect(page.locator("#status")).to_contain_text("Kept: version")
    await expect(rail).to_have_count(14)
    await expect(page.locator("#hidden li")).to_have_text(["BoardShow"])
    # Each setting by its title, its value in words: no ceiling set is "none", not null;
    # the ladder's set with the ladder, the org's by its admins.
    settings = page.locator("#settings li")
    await expect(settings.filter(has_text="What your agent may send")).to_have_text(
        "What your agent may send: draft (set with my ladder)"
    )
    await expect(settings.filter(has_text="The org's ceiling")).to_have_text(
        "The org's ceiling: none (set by my org's admins)"
    )
    await expect(settings.filter(has_text="Share outside the org")).to_have_text(
        "Share outside the org: no (set by my org's admins)"
    )

    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    assert (await write(api, people.ada, "user", [rename])).status == 200
    await expect(rail.filter(has_text="Talk")).to_have_count(1)  # redrawn from the stream
    versions = page.locator("#versions li")
    await expect(versions).to_have_count(2)
    await accessible(page)  # versions to revert to
    await versions.nth(1).get_by_role("button", name="Revert to this").click()
    await expect(page.locator("#status")).to_contain_text("Reverted: version")
    await expect(rail.filter(has_text="Talk")).to_have_count(0)
    await expect(versions).to_have_count(3)
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["ops"] == [HIDE_BOARD]

    draft = (await (await write(api, people.agent, "user", [rename])).json())["draft"]
    item = page.locator(f"#drafts li[data-draft={draft['id']}]")
    await item.get_by_role("button", name="Discard").click()
    await expect(page.locator("#status")).to_have_text("Discarded.")
    await expect(page.locator("#no-drafts")).to_be_visible()


async def test_a_person_arranges_their_own_app_from_the_page(api, people, page):
    """The page drew the person's arrangement and let them change nothing of it but through
    their agent's drafts: they now move, hide, show and rename what their rail shows, and
    set their settings and their look, each a version of their layer. By keyboard, the
    control they pressed keeps their place as the page is drawn anew."""
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    rail = page.locator("#rail li .title")
    await expect(rail).to_have_count(15)
    before = await rail.all_inner_texts()
    chat = before.index("Chat")

    up = page.get_by_role("button", name="Move Chat up")
    await up.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#status")).to_have_text(_written("Moved Chat up"))
    swapped = [*before]
    swapped[chat - 1], swapped[chat] = "Chat", before[chat - 1]
    await expect(rail).to_have_text(swapped)
    assert await page.evaluate("document.activeElement.dataset.at") == "up hanzo/chat/chat"

    await page.get_by_role("button", name="Rename Chat").click()
    await page.get_by_label("New name for Chat").fill("Talk")
    # A change from elsewhere redraws the page as she writes: her words and place stay.
    units = {"op": "set", "kind": "settings", "id": "hanzo/settings/units", "value": "imperial"}
    assert (await write(api, people.ada, "user", [units])).status == 200
    await expect(page.get_by_label("Units")).to_have_value('"imperial"')
    await expect(page.get_by_label("New name for Chat")).to_have_value("Talk")
    await expect(page.get_by_label("New name for Chat")).to_be_focused()
    await accessible(page)  # the rail with its controls, a rename being written
    await page.get_by_label("New name for Chat").press("Enter")
    await expect(page.locator("#status")).to_have_text(_written("Renamed Chat to “Talk”"))
    await expect(rail.nth(chat - 1)).to_have_text("Talk")

    await page.get_by_role("button", name="Hide Board").click()
    await expect(page.locator("#hidden li")).to_have_text(["BoardShow"])
    await expect(rail).to_have_count(14)
    await page.get_by_role("button", name="Show Board").click()
    await expect(page.locator("#no-hidden")).to_be_visible()
    await expect(rail).to_have_count(15)

    await page.get_by_label("Language").select_option("fr")
    await expect(page.locator("#status")).to_have_text(_written("Set Language to fr"))
    await page.get_by_label("Notifications").uncheck()
    await expect(page.locator("#status")).to_have_text(_written("Set Notifications to no"))
    await page.locator("#tokens").get_by_label("Theme").select_option("dark")
    await expect(page.locator("#status")).to_have_text(_written("Set Theme to dark"))
    await page.get_by_label("New chat: no key").fill("Ctrl+K")
    await page.get_by_role("button", name="Bind the key to New chat").click()
    await expect(page.locator("#status")).to_have_text(_written("Bound ctrl+k to New chat"))
    await expect(page.get_by_label("New chat: ctrl+k")).to_have_value("")
    # A key is one command's in a layer: the second is refused, naming both, and nothing
    # is written.
    await page.get_by_label("Search chats: no key").fill("ctrl+k")
    await page.get_by_role("button", name="Bind the key to Search chats").click()
    await expect(page.locator("#status")).to_contain_text(
        "ctrl+k is bound to hanzo/chat/new and hanzo/chat/search in one layer"
    )
    await accessible(page)

    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert composed["hidden"] == []
    assert [a["title"] for a in composed["apps"]] == [*swapped[: chat - 1], "Talk", *swapped[chat:]]
    assert composed["settings"]["hanzo/settings/language"] == "fr"
    assert composed["settings"]["hanzo/settings/notifications"] is False
    assert composed["tokens"]["hanzo/settings/theme"] == "dark"
    chords = {c["id"]: c["chord"] for c in composed["commands"]}
    assert (chords["hanzo/chat/new"], chords["hanzo/chat/search"]) == ("ctrl+k", None)
    versions = await (await api.get("/v1/mod/layers/user/versions", headers=people.ada)).json()
    assert [v["change"]["by"] for v in versions["versions"]] == [f"{people.org}/ada"] * 9


async def test_a_move_on_the_page_is_drawn_as_asked_over_moves_written_before(api, people, page):
    """Two apps moved to one place by writes before (the later drawn there, the earlier
    after it): the page's Down on the app above them wrote two moves, which tied with the
    earlier one, and the rail drew the app a place further than asked."""
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    apps = [(a["id"], a["title"]) for a in composed["apps"]]
    for moved in (apps[5], apps[7]):
        placed = {"op": "move", "kind": "apps", "id": moved[0], "index": 1}
        assert (await write(api, people.ada, "user", [placed])).status == 200
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    rail = page.locator("#rail li .title")
    titles = [t for _, t in apps]
    drawn = [titles[0], titles[7], titles[5], *titles[1:5], titles[6], *titles[8:]]
    await expect(rail).to_have_text(drawn)

    await page.get_by_role("button", name=f"Move {titles[0]} down").click()
    await expect(page.locator("#status")).to_have_text(_written(f"Moved {titles[0]} down"))
    asked = [drawn[1], drawn[0], *drawn[2:]]
    await expect(rail).to_have_text(asked)
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert [a["title"] for a in composed["apps"]] == asked


async def test_a_person_moves_a_panel_to_another_app_s_slot_and_hides_a_page(api, people, page):
    """A mod's view is a page of its app or a panel in a slot an app offers: the person puts
    the calendar's agenda beside their inbox rather than their chat, and hides a page."""
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    views = page.locator("#views li .title")
    await expect(views.filter(has_text="Agenda")).to_have_text("Agenda, a panel in Chat's side")
    await page.get_by_label("Move Agenda to").select_option(label="Inbox's side")
    await expect(page.locator("#status")).to_have_text(_written("Moved Agenda to Inbox's side"))
    await expect(views.filter(has_text="Agenda")).to_have_text("Agenda, a panel in Inbox's side")
    await expect(page.locator("#versions li").first).to_contain_text("move Agenda to Inbox's side")
    await page.get_by_role("button", name="Hide Cards").click()
    await expect(page.locator("#hidden li")).to_have_text(["CardsShow"])
    await accessible(page)
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    slots = {v["id"]: v["slot"] for v in composed["views"]}
    assert slots["hanzo/calendar/agenda"] == "hanzo/inbox/inbox:side"
    assert "hanzo/board/cards" not in slots and composed["hidden"] == ["hanzo/board/cards"]


async def test_a_person_renames_a_panel_and_a_command_as_they_rename_an_app(api, people, page):
    """A view's title and a command's are the person's to rename (§9.2: rename admits apps,
    views and commands), but the page offered Rename for the rail's apps alone."""
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    await page.get_by_role("button", name="Rename Agenda").click()
    await expect(page.get_by_label("New name for Agenda")).to_be_focused()
    await page.get_by_label("New name for Agenda").fill("My day")
    await page.get_by_label("New name for Agenda").press("Enter")
    await expect(page.locator("#status")).to_have_text(_written("Renamed Agenda to “My day”"))
    views = page.locator("#views li .title")
    await expect(views.filter(has_text="My day")).to_have_text("My day, a panel in Chat's side")

    await page.get_by_role("button", name="Rename New chat").click()
    await page.get_by_label("New name for New chat").fill("Start a chat")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator("#status")).to_have_text(
        _written("Renamed New chat to “Start a chat”")
    )
    await expect(page.get_by_label("Start a chat: no key")).to_be_visible()
    await accessible(page)
    composed = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    titles = {(kind, c["id"]): c["title"] for kind in ("views", "commands") for c in composed[kind]}
    assert titles["views", "hanzo/calendar/agenda"] == "My day"
    assert titles["commands", "hanzo/chat/new"] == "Start a chat"


async def test_a_command_sharing_its_id_with_a_token_is_arranged_as_itself(api, people, page):
    """hanzo's settings mod offers the command "Switch theme" and the token "Theme" under one
    id: a key bound to the command was refused as naming nothing, and once hidden the page
    named it by the token's title."""
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    await page.get_by_label("Switch theme: no key").fill("ctrl+t")
    await page.get_by_role("button", name="Bind the key to Switch theme").click()
    await expect(page.locator("#status")).to_have_text(_written("Bound ctrl+t to Switch theme"))
    hide = {"op": "hide", "kind": "commands", "id": "hanzo/settings/theme"}
    assert (await write(api, people.ada, "user", [hide])).status == 200  # by her agent's Keep, say
    await expect(page.locator("#hidden li")).to_have_text(["Switch themeShow"])
    await expect(
        page.locator("#tokens").get_by_label("Theme")
    ).to_be_visible()  # the token is not hidden
    await page.get_by_role("button", name="Show Switch theme").click()
    await expect(page.locator("#status")).to_have_text(_written("Showed Switch theme"))
    await expect(page.get_by_label("Switch theme: ctrl+t")).to_be_visible()


async def test_a_person_sees_their_agent_s_draft_over_their_layer_before_keeping_it(
    api, people, page
):
    """§9.4 rule 7: a host shows an open draft over the layer it would change. The page
    listed the draft's ops in words; it now draws the person's app as it would be with it,
    to read, with Keep, Discard and a way back."""
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    rail = page.locator("#rail li .title")
    await expect(rail).to_have_count(15)
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    written = await write(api, people.agent, "user", [HIDE_BOARD, rename], note="Tidier")
    draft = (await written.json())["draft"]
    item = page.locator(f"#drafts li[data-draft={draft['id']}]")
    await item.get_by_role("button", name="Show it over my layer").click()
    preview = page.locator("#preview")
    named = page.get_by_role("region", name=re.compile("^Shown with 2 changes waiting"))
    await expect(named).to_be_focused()
    await expect(preview).to_contain_text("hide Board; rename Chat to “Talk”")
    await expect(rail).to_have_count(14)
    await expect(rail.filter(has_text="Talk")).to_have_count(1)
    await expect(page.locator("#rail button")).to_have_count(0)  # to read, not to change
    await expect(page.locator("#hidden li")).to_have_text(["Board"])  # hidden by the draft
    await accessible(page)
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["ops"] == []  # shown, not written

    await preview.get_by_role("button", name="Back to my layer as it is").click()
    await expect(preview).to_be_hidden()
    await expect(rail).to_have_count(15)
    await item.get_by_role("button", name="Show it over my layer").click()
    await preview.get_by_role("button", name="Keep").click()
    await expect(page.locator("#status")).to_contain_text("Kept: version")
    await expect(preview).to_be_hidden()
    await expect(rail).to_have_count(14)
    await expect(page.locator("#rail button").first).to_be_visible()  # hers to change again

    # A draft discarded elsewhere while it is shown: the page says so, and draws the layer.
    draft = (await (await write(api, people.agent, "user", [rename])).json())["draft"]
    item = page.locator(f"#drafts li[data-draft={draft['id']}]")
    await item.get_by_role("button", name="Show it over my layer").click()
    await expect(preview).to_be_visible()
    assert (await api.delete(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)).status == 204
    await expect(page.locator("#status")).to_have_text(
        "That change is no longer waiting: this is the layer as it is."
    )
    await expect(preview).to_be_hidden()


async def test_a_change_made_on_a_layer_moved_meanwhile_writes_nothing(api, people, page):
    """The page unaware that the person's layer moved (its watch held): their change is
    refused at the version they saw, nothing is written, and they are shown it as it is."""
    held = asyncio.Event()

    async def hold(route: Route) -> None:
        await held.wait()  # the page sees no change, and no break either
        await route.abort()

    await page.route("**/v1/mod/watch", hold)
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    await expect(page.locator("#rail li")).to_have_count(15)
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    assert (await write(api, people.ada, "user", [rename])).status == 200  # another tab
    await page.get_by_role("button", name="Hide Board").click()
    await expect(page.locator("#status")).to_have_text(
        "My layer changed meanwhile, and nothing was changed: here it is now; choose again."
    )
    await expect(page.locator("#rail li .title").filter(has_text="Talk")).to_have_count(1)
    await expect(page.locator("#no-hidden")).to_be_visible()
    layer = await (await api.get("/v1/mod/layers/user", headers=people.ada)).json()
    assert layer["ops"] == [rename] and layer["change"]["ops"] == [rename]
    held.set()


async def test_what_the_org_hides_no_member_shows_from_the_page(api, people, page):
    assert (await write(api, people.root, "org", [HIDE_BOARD])).status == 200
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    await expect(page.locator("#hidden li")).to_have_text(["Board (hidden by my org)"])
    await expect(page.get_by_role("button", name="Show Board")).to_have_count(0)


async def test_an_admin_arranges_what_their_org_draws_for_everyone(api, people, page):
    """To an admin, the org's arrangement is drawn as every member is drawn it, and changed
    there: an app hidden for everyone, a member's setting given its default, the org's own
    setting set; their own changes over it are not shown, nor changed."""
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Mine"}
    assert (await write(api, people.root, "user", [rename])).status == 200
    await page.fill("#token", token(org=people.org, user=f"{people.org}/root", roles=("admin",)))
    await page.click("#use")
    rail = page.locator("#rail li .title")
    await expect(rail.filter(has_text="Mine")).to_have_count(1)
    await page.select_option("#layer", "org")
    await expect(page.locator("#rail-of")).to_have_text("My org's rail")
    await expect(page.locator("#about")).to_contain_text("everyone in my org is shown")
    await expect(rail.filter(has_text="Mine")).to_have_count(0)  # theirs is not the org's

    await page.get_by_role("button", name="Hide Dev").click()
    await expect(page.locator("#status")).to_have_text(_written("Hid Dev"))
    await page.get_by_label("Units").select_option("imperial")
    await expect(page.locator("#status")).to_have_text(_written("Set Units to imperial"))
    await page.get_by_label("Share outside the org").check()
    await expect(page.locator("#status")).to_have_text(_written("Set Share outside the org to yes"))
    settings = page.locator("#settings li")
    await expect(settings.filter(has_text="The org's ceiling")).to_have_text(
        "The org's ceiling: none (set with the ladder)"
    )
    await accessible(page)

    org = await (await api.get("/v1/mod/layers/org", headers=people.root)).json()
    assert org["ops"] == [
        {"op": "hide", "kind": "apps", "id": "hanzo/dev/dev"},
        {"op": "set", "kind": "settings", "id": "hanzo/settings/units", "value": "imperial"},
        {"op": "set", "kind": "settings", "id": "hanzo/settings/share-outside", "value": True},
    ]
    mine = await (await api.get("/v1/mod/layers/user", headers=people.root)).json()
    assert mine["ops"] == [rename]
    ada = await (await api.get("/v1/mod/composed", headers=people.ada)).json()
    assert "hanzo/dev/dev" in ada["hidden"]
    assert ada["settings"]["hanzo/settings/units"] == "imperial"
    assert ada["settings"]["hanzo/settings/share-outside"] is True


async def test_an_admin_keeps_a_draft_of_the_org_layer_from_the_page(api, people, page):
    """An agent never commits the org layer: its draft waits for an admin's Keep, which the
    page offered only for the person's own layer."""
    await page.fill("#token", token(org=people.org, user=f"{people.org}/root", roles=("admin",)))
    await page.click("#use")
    await page.select_option("#layer", "org")
    await expect(page.locator("#versions-of")).to_have_text("Versions of my org's layer")
    await expect(page.locator("#no-versions")).to_be_visible()
    written = await write(api, people.root_agent, "org", [HIDE_BOARD], note="No one opens it")
    assert written.status == 202, await written.text()
    draft = (await written.json())["draft"]
    item = page.locator(f"#drafts li[data-draft={draft['id']}]")
    await expect(item.locator(".what")).to_have_text("1 change by your agent: hide Board")
    await item.get_by_role("button", name="Keep").click()
    await expect(page.locator("#status")).to_contain_text("Kept: version")
    await expect(page.locator("#versions li")).to_have_count(1)
    await expect(page.locator("#no-versions")).to_be_hidden()
    org = await (await api.get("/v1/mod/layers/org", headers=people.root)).json()
    assert org["ops"] == [HIDE_BOARD]


async def test_a_member_is_offered_their_own_layer_alone(api, people, page):
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    await expect(page.locator("#rail li").first).to_be_visible()
    await expect(page.locator("#which")).to_be_hidden()


async def test_the_page_follows_changes_again_after_its_watch_is_refused(api, people, page):
    """The watch refused 503 (the bus away, as the gateway says `watch-unavailable`): the
    page says it is not following, opens the watch again a second later, and follows
    changes again. Before, it stopped following until it was loaded again, silently."""
    asked: list[str] = []
    seen_away = asyncio.Event()  # the page is let open its watch again once it said so

    async def refuse_the_first(route: Route) -> None:
        asked.append(route.request.url)
        if len(asked) > 1:
            await seen_away.wait()
            await route.continue_()
            return
        problem = {"type": "urn:tether:problem:watch-unavailable", "status": 503,
                   "title": "watch unavailable", "detail": "the bus did not answer"}  # fmt: skip
        await route.fulfill(status=503, json=problem)

    await page.route("**/v1/mod/watch", refuse_the_first)
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    rail = page.locator("#rail li")
    await expect(rail).to_have_count(15)
    await expect(page.locator("#away")).to_be_visible()  # it says it is not following
    seen_away.set()

    async def asked_again() -> bool:
        return len(asked) > 1

    await eventually(asked_again)
    await expect(page.locator("#away")).to_be_hidden()

    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    assert (await write(api, people.ada, "user", [rename])).status == 200
    await expect(rail.filter(has_text="Talk")).to_have_count(1)


async def test_a_change_made_on_the_page_is_drawn_once(api, people, page):
    """The page drew itself again when its change was answered, and again when the watch
    reported the same version: two full draws (six reads each) a change. The watch's report
    of a version drawn or written here draws nothing; a change from elsewhere still does;
    and what is read again unchanged is not drawn again."""
    composed: list[str] = []
    page.on("request", lambda r: composed.append(r.url) if r.url.endswith("/composed") else None)
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    await expect(page.locator("#rail li")).to_have_count(15)

    async def watching() -> bool:  # drawn at sign-in, then again as the watch opened
        return len(composed) == 2

    await eventually(watching)
    await page.get_by_role("button", name="Hide Board").click()
    await expect(page.locator("#status")).to_have_text(_written("Hid Board"))
    # From elsewhere, after it: once it is drawn, the watch has reported the page's own.
    rename = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Talk"}
    assert (await write(api, people.ada, "user", [rename])).status == 200
    await expect(page.locator("#rail li").filter(has_text="Talk")).to_have_count(1)
    assert len(composed) == 4, composed

    # Read again with nothing changed (a refused change; the watch opening), the page is
    # left as it was: a control replaced as it was clicked lost the click.
    up = page.get_by_role("button", name="Move Talk up")
    await up.evaluate("button => { button.kept = true; }")
    await page.get_by_label("New chat: no key").fill("ctrl+")
    await page.get_by_role("button", name="Bind the key to New chat").click()
    await expect(page.locator("#status")).to_contain_text("'ctrl+' is not a chord")
    assert await up.evaluate("button => button.kept === true")


async def test_older_versions_are_read_a_page_at_a_time_in_the_console(api, people, page):
    """Thirty versions of a large layer are more than one page: the console shows the
    newest, then the older ones as asked for, each once, until none is left."""
    r = await install(api, people.ada, crowded(0, 1920))
    assert r.status == 201, await r.text()
    made = await renamed(api, people.ada, [f"acme/crowd-0/c{j}" for j in range(1920)], "T" * 40)
    await page.fill("#token", token(org=people.org, user=f"{people.org}/ada"))
    await page.click("#use")
    versions, older = page.locator("#versions li"), page.locator("#older")
    await expect(versions.first).to_contain_text(f"Version {made[-1]} (now)")
    assert await versions.count() < len(made)
    while await older.is_visible():
        shown = await versions.count()
        await older.click()
        try:
            await expect(versions).not_to_have_count(shown, timeout=3000)
        except AssertionError:
            pass  # the page was drawn again as the watch opened, from the newest: ask again
    await expect(versions).to_have_count(len(made))
    shown = [
        int(v) for v in await versions.evaluate_all("(vs) => vs.map((v) => v.dataset.version)")
    ]
    assert shown == sorted(made, reverse=True)


def _written(change: str) -> re.Pattern[str]:
    """The page's word that the person's change was written, as the version it made."""
    return re.compile(rf"^{re.escape(change)}: version \d+\.$")
