"""The owner console (manager-agents.md §5.3), in headless Chromium: Priya, the owner and
an admin, reads what her org's Chonks did: a run's message with its [n] markers leading to
its sources in a side panel, its rule evaluations as a table, its confidence and gaps, and
what it did; she stops a cadence. A member is told the page is an admin's."""

import asyncio

import pytest
from playwright.async_api import Route, expect

from libs.audit.reading import records
from tests.chonk.conftest import ORG
from tests.chonk.test_rc_mgr_02_disputed import dispute_the_check_in
from tests.support import accessible, bearer, browser_page, led_to, token

PRIYA = token(org=ORG, user=f"{ORG}/priya", roles=("admin",))


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console/runs"))) as page:
        yield page


async def sign_in(page, as_token: str) -> None:
    await page.fill("#token", as_token)
    await page.click("#use")


async def test_the_owner_reads_a_runs_message_beside_its_receipts_and_rules(api, page):
    """Before, a run's receipt was read from the API alone, by a run id nothing listed."""
    r = await api.post(
        "/v1/chonk/runs", json={"tenant": ORG, "run": "owner_update"}, headers=bearer(PRIYA)
    )
    assert r.status == 201, await r.text()
    await sign_in(page, PRIYA)
    await page.locator("#runs li").first.get_by_role("button").click()
    await expect(page.locator("#run-title")).to_contain_text("Chief Executive Otter")
    await expect(page.locator("#run-title")).to_contain_text("run when asked")
    await expect(page.locator("#run-title")).to_contain_text(
        "as Chonksworth, tone 0.7 (owner update)"
    )
    body = page.locator("#body")
    await expect(body).to_contain_text("Morning, Priya. Walk with me.")
    await expect(body).not_to_contain_text("Receipts")  # the block is the side panel
    # Each marker leads to its source in the panel.
    await body.get_by_role("link", name="[3]").first.click()
    assert page.url.endswith("#source-3")
    await expect(page.locator("#sources li:target")).to_contain_text(
        "Org Model prj_v2ga@v1291 — target 2026-10-31"
    )
    await expect(page.locator("#sources li")).to_have_count(15)
    rows = page.locator("#rules tbody tr")
    await expect(rows).to_have_count(5)
    await expect(rows.nth(2)).to_have_text("CAP-GAP-0.5threshold exceeded")
    await expect(page.locator("#confidence")).to_have_text(
        "Confidence 0.86 · gaps: HubSpot mirror last synced 2026-09-06 22:00Z (9h stale)"
    )
    await expect(page.locator("#actions li").first).to_have_text(
        "Send message (owner) to Priya: autonomous"
    )
    await accessible(page)  # the run open: its message, sources and rules beside it
    assert await led_to(page) == ["/console", "/console/layout", "/console/knows", "/console/org"]


async def test_the_run_shown_is_the_run_last_opened(api, page):
    """Two runs opened quickly, the first's report slow: it came last and was shown, under
    the second's click. A report asked for before a later click is not shown."""
    for run in ("owner_update", "checkin_ana"):
        r = await api.post(
            "/v1/chonk/runs", json={"tenant": ORG, "run": run}, headers=bearer(PRIYA)
        )
        assert r.status in (200, 201), await r.text()
    await sign_in(page, PRIYA)
    owner = page.locator("#runs li[data-run=run_owner_update_0907]")
    checkin = page.locator("#runs li[data-run=run_checkin_ana_0908]")
    held = asyncio.Event()

    async def slowly(route: Route) -> None:
        await held.wait()
        await route.continue_()

    await page.route("**/v1/chonk/runs/run_owner_update_0907", slowly)
    await owner.get_by_role("button").click()
    await checkin.get_by_role("button").click()
    await expect(page.locator("#run-title")).to_contain_text("Chief Human Officer")
    async with page.expect_response("**/v1/chonk/runs/run_owner_update_0907"):
        held.set()
    # The slow report read (its answer in, then two frames drawn after it): not shown.
    await page.evaluate(
        "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
    )
    await expect(page.locator("#run-title")).to_contain_text("Chief Human Officer")
    await expect(page.locator("#body")).not_to_contain_text("Morning, Priya")


async def test_the_owner_sees_a_run_its_reader_said_was_not_so(api, page):
    """RC-MGR-02's review item, where the owner reads the run (before, it was in the audit
    trail alone)."""
    report, _ = await dispute_the_check_in(api)
    await sign_in(page, PRIYA)
    listed = page.locator(f"#runs li[data-run={report['id']}]")
    await expect(listed).to_contain_text("run when asked, disputed once")
    await listed.get_by_role("button").click()
    await expect(page.locator("#disputed")).to_have_text(
        "A reader said this was not so: disputed once. Check its sources."
    )


async def test_the_owner_stops_a_cadence_from_the_page(api, page):
    started = await api.post(
        "/v1/chonk/cadences",
        json={"tenant": ORG, "cadence": "cad_owner_update"},
        headers=bearer(PRIYA),
    )
    assert started.status == 201, await started.text()
    await sign_in(page, PRIYA)
    cadence = page.locator("#cadences li[data-cadence=cad_owner_update]")
    await expect(cadence).to_contain_text("The owner update, running since")
    await cadence.get_by_role("button", name="Stop").click()
    await expect(page.locator("#status")).to_have_text("The owner update comes round no more.")
    await expect(page.locator("#no-cadences")).to_be_visible()
    listed = await api.get("/v1/chonk/cadences", headers=bearer(PRIYA))
    assert (await listed.json())["cadences"] == []


async def test_a_member_is_told_the_page_is_an_admins_and_not_led_to_it(api, page):
    await sign_in(page, token(org=ORG, user=f"{ORG}/ana"))
    await expect(page.locator("#status")).to_have_text(
        f"Only an admin of {ORG} reads what its Chonks did."
    )
    await expect(page.locator("#owner")).to_be_hidden()
    await page.goto(str(api.make_url("/console/knows")))
    await expect(page.locator("#knows")).to_be_visible()
    assert "/console/runs" not in await led_to(page)


async def test_an_admin_is_led_to_it_from_every_other_page(api, page):
    for path in ("/console/knows", "/console/layout", "/console"):
        await page.goto(str(api.make_url(path)))
        if path == "/console/knows":
            await sign_in(page, PRIYA)
        await expect(page.get_by_role("link", name="What my org's Chonks did")).to_be_visible()


async def test_an_admin_of_an_org_with_no_chonk_is_told_there_is_no_voice_to_set(api, page, org):
    """The voice's heading stood over nothing for an org that runs no Chonk."""
    await sign_in(page, token(org=org, user=f"{org}/ada", roles=("admin",)))
    await expect(page.locator("#no-runs")).to_be_visible()
    await expect(page.locator("#no-voice")).to_be_visible()
    await expect(page.locator("#voice")).to_be_hidden()


async def test_the_owner_sets_how_the_chonks_speak_from_the_page(api, page, operator):
    """EC-MGR-008 and RC-MGR-03 from the owner console: the dial, a ceiling lowered, a
    Chonk renamed; a ceiling raised is refused with its reason. Before, the voice was set
    through the API alone."""
    await sign_in(page, PRIYA)
    try:
        await expect(page.locator("#dial")).to_have_value("0.7")
        await expect(page.locator("#no-voice")).to_be_hidden()
        await page.fill("#dial", "0.1")
        await page.fill("#ceilings input[data-context=safety]", "0.5")
        await page.fill("#skins input[name=name][data-chonk=chonksworth]", "Walter")
        await page.fill("#skins input[name=species][data-chonk=chonksworth]", "walrus")
        await page.click("#save-voice")
        await expect(page.locator("#status")).to_contain_text(
            "tone.ceilings.safety: 0.5 is above its ceiling 0.0; a ceiling may only be lowered"
        )
        await page.fill("#ceilings input[data-context=safety]", "")
        await page.fill("#ceilings input[data-context=wellbeing]", "0.1")
        await page.click("#save-voice")
        await expect(page.locator("#status")).to_have_text("Saved: their next runs speak this way.")
        saved = await (await api.get("/v1/chonk/voice", headers=bearer(PRIYA))).json()
        assert saved["tone"]["default"] == 0.1
        assert saved["tone"]["ceilings"] == {"wellbeing": 0.1}
        walter = saved["chonks"]["chonksworth"]
        assert (walter["name"], walter["species"]) == ("Walter", "walrus")
        assert saved["chonks"]["fin"]["name"] == "Chief Fin Officer"
        # Stored as far as the org changed it: the charters' own voices are theirs still,
        # so a release that renames one is heard. Before, every name shown was stored.
        [*_, stored] = [r for r in await records(operator.jetstream(), ORG)
                        if r.action == "chonk.voice.set"]  # fmt: skip
        assert stored.data["chonks"] == {"chonksworth": {"name": "Walter", "species": "walrus"}}
    finally:
        shipped = {"tone": {"default": 0.7}}
        r = await api.put("/v1/chonk/voice", json=shipped, headers=bearer(PRIYA))
        assert r.status == 200, await r.text()
