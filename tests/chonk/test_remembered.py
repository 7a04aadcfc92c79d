"""§10: "If Ana replies 'remember, Sept 10-20', the next ic_reply run writes one
consideration fact with sharedBy: self, source = her message, usedFor: ['scheduling',
'brief_timing'], and the harness stores her words, not a paraphrase." Through the running
services, from her thread with the Chief Human Officer. Before, no Chonk read it. (The
spec's dash is an en dash; ruff keeps them out of the code.)"""

import uuid
from datetime import UTC, datetime, timedelta

from libs.audit.reading import records
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually

ANA, PRIYA = person("ana"), person("priya", roles=("admin",))


async def _facts(api) -> dict[str, dict]:
    knows = await (await api.get("/v1/chonk/knows", headers=ANA)).json()
    return {f["id"]: f for f in knows["facts"]}


async def test_remember_in_ana_s_thread_keeps_a_consideration_in_her_words(api, operator):
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=PRIYA)
    assert r.status == 201, await r.text()
    (checkin,) = (await r.json())["delivered"]
    before, offset = await _facts(api), len(await records(operator.jetstream(), ORG))
    words = f"remember, Sept 10-20 (said {uuid.uuid4().hex[:6]})"
    sent = await api.post(
        f"/v1/rooms/{checkin['room']}/messages", json={"text": words}, headers=ANA
    )
    assert sent.status == 201, await sent.text()

    async def kept() -> list[dict] | None:
        new = [f for i, f in (await _facts(api)).items() if i not in before]
        return new or None

    (fact,) = await eventually(kept)
    assert (fact["kind"], fact["content"], fact["written_by"]) == (
        "consideration", words, "human"
    )  # fmt: skip
    assert fact["used_for"] == ["scheduling", "brief_timing"]
    expires = datetime.fromisoformat(fact["expires_at"])
    assert abs(expires - datetime.now(UTC) - timedelta(days=90)) < timedelta(minutes=5)
    actions = [(x.action, x.actor.sub) for x in (await records(operator.jetstream(), ORG))[offset:]]
    assert ("chonk.memory.write", f"{ORG}/ana") in actions  # her act: her yes

    page = await api.get(f"/v1/rooms/{checkin['room']}/messages?limit=200", headers=ANA)
    said = (await sent.json())["seq"]
    (reply,) = [
        m for m in (await page.json())["messages"]
        if m["seq"] > said and m["text"].startswith("Kept, in")
    ]  # fmt: skip
    assert "for 90 days" in reply["text"] and "knows page" in reply["text"]

    # Said again through the API (a client's retry), one fact, one record of it.
    again = await api.post(
        "/v1/chonk/messages", json={"chonk": "human", "text": words}, headers=ANA
    )
    assert (await again.json())["delivered"][0]["fact"] == fact["id"]
    assert [f for i, f in (await _facts(api)).items() if i not in before] == [fact]
    writes = [x for x in (await records(operator.jetstream(), ORG))[offset:]
              if x.action == "chonk.memory.write"]  # fmt: skip
    assert len(writes) == 1

    # And hers to take back.
    redacted = await api.post(f"/v1/chonk/memory/{fact['id']}", json={}, headers=ANA)
    assert redacted.status == 200, await redacted.text()
    assert (await _facts(api))[fact["id"]]["redacted"] is True


async def test_only_a_chonk_that_may_keep_a_consideration_keeps_one_and_only_when_asked(api):
    before = await _facts(api)
    heard = await api.post(
        "/v1/chonk/messages", json={"chonk": "human", "text": "I don't remember the dates"},
        headers=ANA,
    )  # fmt: skip
    assert (await heard.json())["intent"] == "none"
    # §6.2: the Chief Human Officer and the Chief Operating Orca alone keep one; another
    # says so, and which do.
    said = {"chonk": "build", "text": "remember, I'm out Sept 10-20"}
    body = await (await api.post("/v1/chonk/messages", json=said, headers=ANA)).json()
    assert body["intent"] == "remember" and "fact" not in body["delivered"][0]
    (told,) = body["delivered"]
    page = await api.get(f"/v1/rooms/{told['room']}/messages?limit=200", headers=ANA)
    (reply,) = [m for m in (await page.json())["messages"] if m["seq"] == told["seq"]]
    assert reply["text"].startswith("I don't keep what to plan around. The Chief Human "
                                    "Officer or Chief Operating Orca does")  # fmt: skip
    assert await _facts(api) == before


async def test_what_is_never_stored_is_not_kept_and_she_is_told_why(api):
    before = await _facts(api)
    text = f"Remember: my religion means I fast that week ({uuid.uuid4().hex[:6]})"
    heard = await api.post("/v1/chonk/messages", json={"chonk": "human", "text": text}, headers=ANA)
    body = await heard.json()
    assert body["intent"] == "remember" and "fact" not in body["delivered"][0]
    assert await _facts(api) == before
    page = await api.get(
        f"/v1/rooms/{body['delivered'][0]['room']}/messages?limit=200", headers=ANA
    )
    (reply,) = [
        m for m in (await page.json())["messages"] if m["seq"] == body["delivered"][0]["seq"]
    ]
    assert reply["text"].startswith("I haven't kept that: never stored")
