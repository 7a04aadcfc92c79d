"""EC-MGR-009 through the running services, on sim-harbortable: Rosa texts "Jamal didn't
show, I'm alone on the line" at 16:55. The Chief Operating Orca runs the shift-cover solver
(certifications, the weekly hours cap, rest, other shifts; the call-out exception lifts the
cap). Certified cover within the cap is texted at once. Overtime waits for Kwame's yes. Rosa
is told who was asked, and the Chief Human Officer takes a check-in with Jamal. The first
yes takes the shift. Kwame is told only if no one has said yes when the escalation comes
due. No discipline language appears anywhere."""

import re
from datetime import UTC, datetime, timedelta

import msgspec

from libs.audit.reading import records
from libs.contracts import chonk, scheduler
from libs.contracts.streams import timer_subject
from tests.chonk.conftest import HARBOR, worker
from tests.chonk.test_why import why
from tests.personal.conftest import eventually, problem
from tests.support import bearer, published_from_now, token

LINE, BAR = "shf_line_pm_0908", "shf_bar_pm_0908"
DISCIPLINE = re.compile(
    r"\b(disciplin\w*|warning|write[- ]?up|no[- ]show|penalt\w*|fault|blame|late|strike|"
    r"fired|terminat\w*|PIP|consequences?|reprimand\w*|unreliable|excuse)\b",
    re.IGNORECASE,
)


async def _all(api, name: str) -> list[dict]:
    """Every message in every room of the person's."""
    headers = worker(name)
    found = []
    for room in (await (await api.get("/v1/rooms", headers=headers)).json())["rooms"]:
        page = await api.get(f"/v1/rooms/{room['id']}/messages", headers=headers)
        found += (await page.json())["messages"]
    return found


async def _said(api, name: str, start: str) -> dict | None:
    found = [m for m in await _all(api, name) if m["text"].startswith(start)]
    return found[-1] if found else None


async def _answer(api, name: str, message: dict, option: int) -> None:
    r = await api.post(
        f"/v1/rooms/{message['room']}/questions/{message['seq']}/answer",
        json={"choice": {"type": "pick", "option": option}},
        headers=worker(name),
    )
    assert r.status == 201, await r.text()


async def _fire_cover(operator, shift: str) -> None:
    """What the scheduler delivers when the escalation comes due, sent twice."""
    key = f"cover.{HARBOR}.{shift}"
    get = msgspec.json.encode(scheduler.GetTimer(key=key))
    reply = await operator.request(scheduler.GET.published_by("chonk"), get, timeout=5)
    held = msgspec.json.decode(reply.data)
    assert (held["target"], held["state"]) == ("cover", "pending"), held
    due = datetime.fromisoformat(held["due_at"])
    fired = scheduler.Fired(
        owner="chonk", key=key, target="cover", due_at=due, fired_at=due, late_ms=0.0,
        payload=held["payload"],
    )  # fmt: skip
    for _ in range(2):
        await operator.jetstream().publish(
            timer_subject("chonk", "cover"), msgspec.json.encode(fired)
        )


async def _recorded(operator, action: str, target: str) -> list:
    async def found() -> list | None:
        hits = [
            x for x in await records(operator.jetstream(), HARBOR)
            if x.action == action and x.target == target
        ]  # fmt: skip
        return hits or None

    return await eventually(found)


async def test_ec_mgr_009_a_call_out_is_covered_within_the_labor_rules(api, operator):
    js = operator.jetstream()
    accepted = await published_from_now(js, chonk.HANDOFF_ACCEPTED.name)
    readies = await published_from_now(js, chonk.ACTION_READY.name)
    texted = datetime.now(UTC)
    r = await api.post(
        "/v1/chonk/messages",
        json={"chonk": "ops", "text": "Jamal didn't show, I'm alone on the line"},
        headers=worker("rosa"),
    )
    assert r.status == 200, await r.text()
    heard = await r.json()
    assert (heard["intent"], heard["shift"]) == ("call_out", LINE)

    # Marco: certified, free, rested, within the cap: texted at once, as a text reads.
    offer = await _said(api, "marco", "Hi Marco, the line needs cover tonight until 23:00")
    assert offer is not None and offer["question"]["options"] == ["I can cover", "Can't tonight"]
    assert "it would put you at 36.1 hours this week" in offer["text"]
    assert offer["text"].endswith("Reply WHY for sources.") and "[" not in offer["text"]
    assert "Jamal" not in offer["text"]  # the candidates are not told who is missing
    assert datetime.fromisoformat(offer["at"]) - texted < timedelta(minutes=2)

    # Dee is certified and free, but over the cap: the call-out exception allows it, so
    # Kwame decides first, and Dee has heard nothing yet.
    assert await _said(api, "dee", "Hi Dee") is None
    ask = await _said(api, "kwame", "Dee is certified for the line")
    assert ask is not None and "44.1 hours this week, over the 40 hour cap" in ask["text"]
    # Not certified (Sam), on the bar (Lin), not rested since the morning (Tomi): not asked.
    for name in ("sam", "lin", "tomi"):
        assert await _said(api, name, f"Hi {name.capitalize()}, the line") is None
    (start,) = await _recorded(operator, "chonk.cover.start", LINE)
    assert start.data["asked"] == [f"{HARBOR}/marco", f"{HARBOR}/dee"]
    assert start.data["unfit"] == {
        f"{HARBOR}/sam": "not certified for the line: line_cook",
        f"{HARBOR}/lin": "on bar until 23:00",
        f"{HARBOR}/tomi": "rested 8.9 h of the 10 h minimum",
        f"{HARBOR}/ike": "not certified for the line: line_cook",
        f"{HARBOR}/ola": "not certified for the line: line_cook",
        f"{HARBOR}/kwame": "not certified for the line: line_cook",
    }

    confirm = await _said(api, "rosa", "Got it, Rosa.")
    assert "I've asked Marco to come in and cover the line until 23:00." in confirm["text"]
    assert "I've asked Kwame about Dee, who would be in overtime." in confirm["text"]

    # "Reply WHY for sources": Marco asks in his thread, Rosa as well.
    sent = await api.post(
        f"/v1/rooms/{offer['room']}/messages", json={"text": "WHY"}, headers=worker("marco")
    )
    assert sent.status == 201, await sent.text()
    sources = await eventually(lambda: _said(api, "marco", "[1] Roster"))
    assert sources["seq"] > (await sent.json())["seq"] and sources["text"].splitlines() == [
        "[1] Roster: the line until 23:00, one short",
        "[2] The line needs food_safety, line_cook; you hold each",
        "[3] Your hours this week with tonight: 36.1",
        "[4] Labor rules: 40 h a week (a call-out lifts it; past it is overtime); 10 h rest "
        "between shifts",
    ]
    assert len(sources["text"]) <= 3 * 160  # three SMS segments at most
    fit = "[3] Free tonight, certified and within the rules, fewest hours first: Marco, Dee"
    assert fit in await why(api, "rosa")

    # The Chief Human Officer takes the check-in with Jamal: quiet HR, nothing guessed.
    while (decided := msgspec.json.decode((await accepted.next_msg(timeout=10)).data))["request"][
        "id"
    ] != f"hnd_cover_{LINE}":
        pass
    request = decided["request"]
    assert (request["fromChonk"], request["toChonk"], request["reason"]) == (
        "ops", "human", "quiet_hr"
    )  # fmt: skip
    assert request["subjectRefs"] == [f"{HARBOR}/jamal"]

    # Kwame says yes: Dee is asked. Marco says yes first and takes the shift.
    await _answer(api, "kwame", ask, 0)
    dee = await eventually(lambda: _said(api, "dee", "Hi Dee, the line needs cover"))
    assert "overtime Kwame approved under the call-out rule" in dee["text"]
    # Her WHY reads what her text, sent on Kwame's yes, rests on.
    assert "[3] Your hours this week with tonight: 44.1" in await why(api, "dee")
    await _answer(api, "marco", offer, 0)
    coming = await eventually(lambda: _said(api, "rosa", "Marco is coming in"))
    assert coming["text"] == "Marco is coming in to cover the line until 23:00."
    assert await eventually(lambda: _said(api, "marco", "Thank you, Marco"))
    ready = {}
    while ready.get("run") != f"run_cover_{LINE}":
        ready = msgspec.json.decode((await readies.next_msg(timeout=10)).data)
    assert (ready["action"]["kind"], ready["action"]["to"]) == (
        "CONNECTOR_WRITE:scheduling.swap", LINE
    )  # fmt: skip
    # Dee's yes comes second: the shift is covered already.
    await _answer(api, "dee", dee, 0)
    assert await eventually(lambda: _said(api, "dee", "Thanks, Dee: it's covered already."))

    # The escalation comes due with the shift covered: Kwame is not told.
    await _fire_cover(operator, LINE)
    (covered,) = await _recorded(operator, "chonk.cover.covered", LINE)
    assert covered.data == {"by": f"{HARBOR}/marco"}
    # Closed, the cover is kept a week (the default), then removed by the server.
    cover = await js.get_last_msg("KV_chonk-runs", f"$KV.chonk-runs.cover.{HARBOR}.{LINE}")
    assert msgspec.json.decode(cover.data)["closed"] is True
    assert (cover.headers or {}).get("Nats-TTL") == "604800s"
    assert await _said(api, "kwame", "No cover yet") is None
    (taken,) = await _recorded(operator, "chonk.cover.taken", LINE)
    assert taken.data == {"by": f"{HARBOR}/marco"}

    # No discipline language anywhere: every message, the handoff, the swap; and nothing is
    # kept about Jamal.
    texts = [request["requestedAction"], ready["action"]["text"]]
    for name in ("rosa", "marco", "dee", "kwame", "jamal"):
        texts += [m["text"] for m in await _all(api, name)]
    assert [t for t in texts if DISCIPLINE.search(t)] == []
    knows = await (await api.get("/v1/chonk/knows", headers=worker("jamal"))).json()
    assert knows["facts"] == []


async def test_with_no_yes_when_the_escalation_comes_due_kwame_is_told(api, operator):
    r = await api.post(
        "/v1/chonk/messages",
        json={"chonk": "ops", "text": "Ike hasn't come in, I'm alone on the bar"},
        headers=worker("lin"),
    )
    assert r.status == 200, await r.text()
    assert await _said(api, "ola", "Hi Ola, the bar needs cover tonight until 23:00")
    await _fire_cover(operator, BAR)
    (escalated,) = await _recorded(operator, "chonk.cover.escalate", BAR)
    assert escalated.data == {"to": f"{HARBOR}/kwame"}
    told = await eventually(lambda: _said(api, "kwame", "No cover yet for the bar"))
    assert "Ike is not in and no one has said yes. Lin is there without them." in told["text"]
    assert not DISCIPLINE.search(told["text"])


async def test_a_message_the_chonk_cannot_act_on_says_why(api):
    send = "/v1/chonk/messages"
    unnamed = {"chonk": "ops", "text": "I'm alone on the line"}
    r = await api.post(send, json=unnamed, headers=worker("rosa"))
    assert await problem(r) == (422, "absent-unnamed")
    assert "say who did not come in: Jamal" in (await r.json())["detail"]
    r = await api.post(send, json={**unnamed, "text": "Jamal didn't show"}, headers=worker("sam"))
    assert await problem(r) == (422, "no-shift")
    r = await api.post(send, json={**unnamed, "chonk": "walrus"}, headers=worker("rosa"))
    assert await problem(r) == (404, "chonk-not-found")
    agent = bearer(token(org=HARBOR, user=f"{HARBOR}/rosa", act=f"agent:{HARBOR}/rosa"))
    r = await api.post(send, json=unnamed, headers=agent)
    assert await problem(r) == (403, "agent-may-not")
    lunch = {"chonk": "ops", "text": "what's for lunch?"}
    r = await api.post(send, json=lunch, headers=worker("rosa"))
    assert (r.status, (await r.json())["intent"]) == (200, "none")
