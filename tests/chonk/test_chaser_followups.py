"""§3.3 through the running services: the Chief Build Officer's chase of #419 on
sim-lanternfish. Stage 0's ask is carried into Ben's room at once; stage 1's follow-up is a
timer on the scheduler, due after four of the tenant's business hours (Stockholm); when it
fires, the Chonk tells Ben, once, recorded."""

from datetime import UTC, datetime

import msgspec

from libs.audit.reading import records
from libs.contracts import scheduler
from libs.contracts.streams import timer_subject
from services.chonk.domain import ladder
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually

ROOT, BEN, ANA = person("priya", roles=("admin",)), person("ben"), person("ana")
STOCKHOLM = ladder.BusinessHours(zone="Europe/Stockholm")


async def _messages(api, room: str, headers: dict) -> list[dict]:
    return (await (await api.get(f"/v1/rooms/{room}/messages", headers=headers)).json())["messages"]


async def test_stage_one_is_a_scheduler_timer_in_business_hours_and_tells_ben_when_it_fires(
    api, operator
):
    before = datetime.now(UTC)
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "chase_ben"}, headers=ROOT)
    assert r.status == 201, await r.text()
    report = await r.json()
    assert [(a["kind"], a["class"]) for a in report["actions"]] == [
        ("SEND_MESSAGE:ic_thread", "AUTONOMOUS"), ("SCHEDULE_FOLLOWUP", "AUTONOMOUS")
    ]  # fmt: skip
    asked, follow = report["delivered"]
    assert asked["to"] == follow["to"] == f"{ORG}/ben"
    (ask,) = await _messages(api, asked["room"], BEN)
    assert ask["text"].startswith("Hey Ben, #419 has been waiting") and ask["author_kind"] == "bot"

    # Stage 1 waits four business hours of the tenant's, on the one engine.
    due = datetime.fromisoformat(follow["due_at"])
    assert ladder.due(before, 4, STOCKHOLM) <= due <= ladder.due(datetime.now(UTC), 4, STOCKHOLM)
    js = operator.jetstream()
    held = await _timer(operator, follow["timer"])
    assert (held["target"], held["state"]) == ("followup", "pending")
    assert datetime.fromisoformat(held["due_at"]) == due

    # The scheduler delivers the fire as it always does; the Chonk tells Ben, once.
    fired = scheduler.Fired(
        owner="chonk",
        key=follow["timer"],
        target="followup",
        due_at=due,
        fired_at=due,
        late_ms=0.0,
        payload=held["payload"],
    )
    for _ in range(2):  # a redelivery stores nothing more
        await js.publish(timer_subject("chonk", "followup"), msgspec.json.encode(fired))

    async def followed() -> list[dict] | None:
        found = await _messages(api, asked["room"], BEN)
        return found if len(found) >= 2 else None

    found = await eventually(followed)
    assert len(found) == 2 and found[1]["text"].startswith("A nudge on #419")
    assert "\nReceipts\n[1] GitHub lanternfish/core#419" in found[1]["text"]
    assert (await api.get(f"/v1/rooms/{asked['room']}", headers=ANA)).status == 404
    actions = [x.action for x in await records(js, ORG)]
    assert "chonk.followup.send" in actions


async def _timer(operator, key: str) -> dict:
    """The chonk service's timer, as the scheduler holds it (asked with the operator's
    unrestricted credential, on chonk's own subject)."""
    get = msgspec.json.encode(scheduler.GetTimer(key=key))
    reply = await operator.request(scheduler.GET.published_by("chonk"), get, timeout=5)
    return msgspec.json.decode(reply.data)
