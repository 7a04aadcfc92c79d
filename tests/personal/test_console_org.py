"""The console's org page, in headless Chromium: an org's admin adds a persona its people
make their agents from, uninstalls a mod installed for the org, and reads the bill with
each agent's runtime. A member is told the page is an admin's."""

from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import expect

from libs.contracts import codec
from libs.contracts.agents import RunEnded
from tests.mod.conftest import install, weather
from tests.personal.conftest import announce, eventually
from tests.personal.test_console import sign_in
from tests.support import accessible, browser_page, led_to, set_plan


@pytest.fixture
def api(whole_api):
    return whole_api


@pytest.fixture
async def page(api):
    async with browser_page(str(api.make_url("/console/org"))) as page:
        yield page


async def test_an_admin_adds_a_persona_their_people_make_their_agents_from(api, people, page):
    """Before, an org's own persona was added through the API alone."""
    await sign_in(page, people, f"{people.org}/root", roles=("admin",))
    cto = page.locator("#personas li[data-persona=cto]")
    await expect(cto).to_contain_text("(a preset)")
    await cto.get_by_role("button", name="Start from it").click()
    await expect(page.locator("#persona-tools")).to_have_value("rooms.draft, code.search")
    await page.fill("#persona-name", "scout")
    await page.fill("#persona-description", "Finds the venue and books it.")
    await page.fill("#persona-tools", "rooms.draft, calendar.read")
    await page.click("#save-persona")
    await expect(page.locator("#status")).to_have_text(
        "Saved: a person can make their agent from @scout."
    )
    scout = page.locator("#personas li[data-persona=scout]")
    await expect(scout).to_contain_text("@scout: Finds the venue and books it. (the org's own)")
    made = await api.post("/v1/agents/me", json={"persona": "scout"}, headers=people.bob)
    assert made.status == 201, await made.text()
    worn = (await made.json())["persona"]
    assert worn["capability_defaults"] == ["rooms.draft", "calendar.read"]
    assert worn["instructions"].startswith("You are a chief technology officer.")


async def test_an_admin_uninstalls_a_mod_of_the_org_on_a_second_click(api, people, page):
    installed = await install(api, people.root, weather())
    assert installed.status == 201, await installed.text()
    await sign_in(page, people, f"{people.org}/root", roles=("admin",))
    mod = page.locator("#installs li[data-mod='acme/weather']")
    await expect(mod).to_contain_text("Weather (acme/weather): may ")
    await accessible(page)  # the personas, the mod installed, the bill
    uninstall = mod.get_by_role("button")
    await uninstall.click()  # the first click only asks
    await expect(uninstall).to_have_text("Uninstall it, and what uses it")
    assert await installs(api, people) == ["acme/weather"]
    await uninstall.click()
    await expect(page.locator("#status")).to_have_text("Uninstalled: acme/weather left.")
    await expect(page.locator("#no-installs")).to_be_visible()
    assert await installs(api, people) == []


async def installs(api, people) -> list[str]:
    listed = await (await api.get("/v1/mod/installs", headers=people.root)).json()
    return [i["mod"] for i in listed["installs"]]


async def test_an_admin_reads_the_bill_with_each_agents_runtime(api, operator, people, page):
    await announce(operator, people.ada_id)
    start = datetime.now(UTC).replace(microsecond=0)
    ended = RunEnded(
        run="r1", org=people.org, agent=f"agent:{people.ada_id}", kind="personal",
        user=people.ada_id, started_at=start, ended_at=start + timedelta(seconds=90),
    )  # fmt: skip
    await operator.jetstream().publish(f"agents.run.ended.{people.org}", codec.encode(ended))

    async def billed() -> bool:
        bill = await (await api.get("/v1/billing", headers=people.root)).json()
        return bill["seconds"] == 90

    await eventually(billed)
    await sign_in(page, people, f"{people.org}/root", roles=("admin",))
    # The month's hours and each agent's alike, each amount to the millionth it is kept
    # at less the zeros past the cents: the table said 0.03 hours and $0.003000 before.
    await expect(page.locator("#bill")).to_have_text(
        f"{start:%Y-%m}, on the free plan: 0.0250 hours of runtime at $0.12 an hour, $0.003."
    )
    await expect(page.locator("#capacity")).to_have_text(
        "Personal agents: 1. The org's agents: 0 of 0. Bots: 0 of 0."
    )
    await expect(page.locator("#runtime tbody tr")).to_have_text(
        [f"agent:{people.ada_id}{people.ada_id}10.0250$0.003"]
    )
    await accessible(page)  # the runtime by agent, a table
    assert await led_to(page) == [
        "/console", "/console/layout", "/console/knows", "/console/runs"
    ]  # fmt: skip


async def test_a_member_is_told_the_page_is_an_admins_and_not_led_to_it(api, people, page):
    await sign_in(page, people, people.ada_id)
    await expect(page.locator("#status")).to_have_text(
        f"Only an admin of {people.org} keeps it here."
    )
    await expect(page.locator("#org")).to_be_hidden()
    assert await led_to(page) == ["/console", "/console/layout", "/console/knows"]


async def test_an_admin_makes_an_agent_of_the_org_within_its_plan(api, operator, people, page):
    """Before, an org's agents were made and read through the API alone."""
    await sign_in(page, people, f"{people.org}/root", roles=("admin",))
    await expect(page.locator("#no-agents")).to_be_visible()
    await page.select_option("#make-persona", "dev")
    await page.click("#make-it")
    await expect(page.locator("#status")).to_contain_text("plan free allows 0 agents")
    await set_plan(operator, people.org, "pro")
    await page.click("#make-it")
    await expect(page.locator("#status")).to_have_text(f"Made agent:{people.org}:dev.")
    made = page.locator(f"#agents li[data-agent='agent:{people.org}:dev']")
    await expect(made).to_contain_text("@dev: an agent, made ")
    await expect(page.locator("#capacity")).to_contain_text("The org's agents: 1 of 3.")
    listed = await (await api.get("/v1/agents", headers=people.root)).json()
    assert [a["id"] for a in listed["agents"]] == [f"agent:{people.org}:dev"]


async def test_an_admin_removes_an_agent_of_the_org_on_a_second_click(api, operator, people, page):
    await set_plan(operator, people.org, "pro")
    made = await api.post("/v1/agents", json={"persona": "cto"}, headers=people.root)
    assert made.status == 201, await made.text()
    await sign_in(page, people, f"{people.org}/root", roles=("admin",))
    cto = page.locator(f"#agents li[data-agent='agent:{people.org}:cto']")
    await expect(page.locator("#capacity")).to_contain_text("The org's agents: 1 of 3.")
    await accessible(page)  # the org's agent, with its button
    remove = cto.get_by_role("button")
    await remove.click()
    await expect(remove).to_have_text("Remove it: it answers and acts no more")
    await remove.click()
    await expect(page.locator("#status")).to_have_text(
        f"Removed agent:{people.org}:cto: its place is free, its tokens are refused and the "
        "grants naming it revoked."
    )
    await expect(page.locator("#no-agents")).to_be_visible()
    await expect(page.locator("#capacity")).to_contain_text("The org's agents: 0 of 3.")
    listed = await (await api.get("/v1/agents", headers=people.root)).json()
    assert listed["agents"] == []
