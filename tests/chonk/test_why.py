"""§7: a text on the SMS surface shows no markers and ends "Reply WHY for sources"; WHY
returns the numbered list in up to three segments. EC-MGR-009's call-out asks it of its
texts (tests/chonk/test_ec_mgr_009.py): before, a WHY was read by no one, and the receipt
those texts promised existed nowhere."""

from tests.chonk.conftest import worker


async def why(api, name: str) -> str:
    """What the Chief Operating Orca answers `name` asking WHY (through the API: the same
    as in their thread, which test_ec_mgr_009 asks in)."""
    heard = await api.post(
        "/v1/chonk/messages", json={"chonk": "ops", "text": "why?"}, headers=worker(name)
    )
    body = await heard.json()
    assert body["intent"] == "why", body
    (replied,) = body["delivered"]
    page = await api.get(f"/v1/rooms/{replied['room']}/messages", headers=worker(name))
    (said,) = [m for m in (await page.json())["messages"] if m["seq"] == replied["seq"]]
    return said["text"]


async def test_why_with_nothing_texted_says_so(api):
    assert await why(api, "sam") == "Nothing I've texted you has sources to show."
