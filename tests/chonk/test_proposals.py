"""PROPOSE_CONFIRM through the running services: with the tenant's function modes putting
the Chief Build Officer's messages at PROPOSE, its ask to Ben waits for the owner's yes,
asked in the room Priya shares with the Chonk; nothing reaches Ben until she says yes."""

from datetime import datetime, timedelta

from libs.audit.reading import records
from services.chonk.domain.proposals import OPEN_FOR
from tests.chonk.conftest import ORG, person
from tests.chonk.test_chaser_followups import _timer
from tests.personal.conftest import eventually, problem

ROOT, BEN = person("priya", roles=("admin",)), person("ben")
PRIYA = ROOT


async def _bens(api) -> list[dict]:
    """Every message in Ben's rooms (other tests of the session may have written some)."""
    found = []
    for room in (await (await api.get("/v1/rooms", headers=BEN)).json())["rooms"]:
        page = await api.get(f"/v1/rooms/{room['id']}/messages", headers=BEN)
        found += (await page.json())["messages"]
    return found


async def test_a_proposed_message_waits_for_the_owner_s_yes_asked_in_her_room(api, operator):
    before = await _bens(api)
    r = await api.post(
        "/v1/chonk/runs", json={"tenant": ORG, "run": "chase_ben_proposed"}, headers=ROOT
    )
    assert r.status == 201, await r.text()
    report = await r.json()
    assert report["actions"][0]["class"] == "PROPOSE_CONFIRM"
    # The ask and the follow-up each wait for her; this test follows the ask.
    assert [(d["kind"], d["class"]) for d in report["delivered"]] == [
        ("SEND_MESSAGE:ic_thread", "PROPOSE_CONFIRM"), ("SCHEDULE_FOLLOWUP", "PROPOSE_CONFIRM")
    ]  # fmt: skip
    proposed = report["delivered"][0]
    assert (proposed["decider"], proposed["to"]) == (f"{ORG}/priya", f"{ORG}/ben")
    page = await api.get(f"/v1/rooms/{proposed['room']}/messages", headers=PRIYA)
    (question,) = [m for m in (await page.json())["messages"] if m["seq"] == proposed["seq"]]
    assert question["question"]["options"] == ["Send it", "Don't send"]
    # It closes three days on, when its proposal is timed to lapse.
    closes_at = datetime.fromisoformat(proposed["closes_at"])
    assert datetime.fromisoformat(question["question"]["closes_at"]) == closes_at
    opened = datetime.fromisoformat(question["at"])
    assert abs(closes_at - opened - OPEN_FOR) < timedelta(seconds=5)
    timer = await _timer(operator, f"proposal.{ORG}.run_chase_ben_proposed_0929-0")
    assert (timer["target"], timer["state"]) == ("proposal_lapse", "pending")
    assert datetime.fromisoformat(timer["due_at"]) == closes_at
    assert timer["payload"] == {"room": proposed["room"], "seq": proposed["seq"]}
    assert question["to"] == f"{ORG}/priya" and "Hey Ben, #419" in question["text"]
    assert await _bens(api) == before  # nothing reached Ben

    # An edit is no answer to "Send it"/"Don't send": refused, never read as a no that
    # drops the proposal while Priya thinks her words went.
    assert question["question"]["editable"] is False
    edited = await api.post(
        f"/v1/rooms/{proposed['room']}/questions/{proposed['seq']}/answer",
        json={"choice": {"type": "edit", "text": "Ben, could you look at #419 today?"}},
        headers=PRIYA,
    )
    assert (await problem(edited)) == (422, "edit-not-offered")

    answer = await api.post(
        f"/v1/rooms/{proposed['room']}/questions/{proposed['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=PRIYA,
    )
    assert answer.status == 201, await answer.text()

    async def told() -> list[dict] | None:
        now = await _bens(api)
        return [m for m in now if m not in before] or None

    (message,) = await eventually(told)
    assert (message["text"], message["author"]) == (report["message"], f"bot:{ORG}:chonk-build")
    actions = [(x.action, x.target) for x in await records(operator.jetstream(), ORG)]
    assert ("chonk.proposal.approve", "run_chase_ben_proposed_0929-0") in actions
    # Answered, the proposal leaves a marker that is removed within the hour, not for good.
    subject = f"$KV.chonk-runs.proposed.{proposed['room']}.{proposed['seq']}"

    async def dropped() -> dict[str, str] | None:
        last = await operator.jetstream().get_last_msg("KV_chonk-runs", subject)
        return last.headers if (last.headers or {}).get("KV-Operation") else None

    marker = await eventually(dropped)
    assert (marker["KV-Operation"], marker.get("Nats-TTL")) == ("PURGE", "3600s")

    # Started again by hand, the run asks the same question, answered: nothing is held
    # for an answer that cannot come.
    again = await api.post(
        "/v1/chonk/runs", json={"tenant": ORG, "run": "chase_ben_proposed"}, headers=ROOT
    )
    assert again.status == 201, await again.text()
    asked = (await again.json())["delivered"][0]
    assert (asked["room"], asked["seq"]) == (proposed["room"], proposed["seq"])
    assert (await dropped()) == marker
