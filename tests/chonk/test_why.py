"""§7: a text on the SMS surface shows no markers and ends "Reply WHY for sources"; WHY
returns the numbered list in up to three segments. EC-MGR-009's call-out asks it of its
texts (tests/chonk/test_ec_mgr_009.py): before, a WHY was read by no one, and the receipt
those texts promised existed nowhere."""

from tests.chonk.conftest import ORG, worker
from tests.personal.conftest import eventually
from tests.support import bearer, token


async def why(api, name: str) -> str:
    """What the Chief Operating Orca answers `name` asking WHY (through the API: the same
    as in their thread, which test_ec_mgr_009 asks in)."""
    heard = await api.post(
        "/v1/chonk/messages", json={"chonk": "ops", "text": "why?"}, headers=worker(name)
    )
    body = await heard.json()
    assert body["intent"] == "why", body
    (replied,) = body["delivered"]
    page = await api.get(f"/v1/rooms/{replied['room']}/messages?limit=200", headers=worker(name))
    (said,) = [m for m in (await page.json())["messages"] if m["seq"] == replied["seq"]]
    return said["text"]


async def test_why_with_nothing_told_says_so(api):
    assert await why(api, "sam") == "Nothing I've told you has sources to show."


async def test_why_after_a_run_s_message_answers_with_its_receipt(api):
    """A run's message in the chat surface carries its Receipts block; WHY after it (the
    person's reflex after any text) is answered with the same sources, numbered."""
    priya = bearer(token(org=ORG, user=f"{ORG}/priya", roles=("admin",)))
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=priya)
    (told,) = (await r.json())["delivered"]
    ana = bearer(token(org=ORG, user=f"{ORG}/ana"))
    sent = await api.post(
        f"/v1/rooms/{told['room']}/messages",
        json={"text": "Why?", "reply_to": told["seq"]},
        headers=ana,
    )
    assert sent.status == 201, await sent.text()
    mine = (await sent.json())["seq"]

    async def answered() -> dict | None:
        page = await api.get(f"/v1/rooms/{told['room']}/messages?after={mine}", headers=ana)
        return next(iter((await page.json())["messages"]), None)

    said = await eventually(answered)
    assert said["text"].startswith("[1] GitHub lanternfish/core#412")
    assert len(said["text"]) <= 3 * 160
