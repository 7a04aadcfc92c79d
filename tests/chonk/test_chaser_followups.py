"""§3.3 through the running services: the Chief Build Officer's chase of #419 on
sim-lanternfish, the whole ladder. Stage 0's ask is carried into Ben's room at once; each
later stage is a timer on the scheduler, due after its wait in the tenant's business hours
(Stockholm): stage 1 nudges Ben, stage 2 tells Ana (the requester) and offers her another
reviewer, stage 3 escalates to Tomás (Ben's manager) with the receipts and says nothing more
to Ben. An answer from anyone the chase asked ends it."""

from datetime import UTC, datetime

import msgspec

from libs.audit.reading import records
from libs.contracts import scheduler
from libs.contracts.streams import timer_subject
from services.chonk.domain import ladder
from tests.acks import Acks
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually

ROOT, BEN, ANA, TOMAS = (
    person("priya", roles=("admin",)), person("ben"), person("ana"), person("tomas")
)  # fmt: skip
PRIYA = ROOT
STOCKHOLM = ladder.BusinessHours(zone="Europe/Stockholm")


async def _messages(api, room: str, headers: dict, after: int = 0) -> list[dict]:
    """The room's messages after seq `after`: a chase's own, in a room another test's chase
    of Ben may have spoken in first."""
    path = f"/v1/rooms/{room}/messages?after={after}"
    return (await (await api.get(path, headers=headers)).json())["messages"]


async def _rooms_of(api, headers: dict) -> dict[str, list[dict]]:
    """Every room of the person's, with its messages."""
    found = (await (await api.get("/v1/rooms", headers=headers)).json())["rooms"]
    return {room["id"]: await _messages(api, room["id"], headers) for room in found}


async def _timer(operator, key: str) -> dict:
    """The chonk service's timer, as the scheduler holds it (asked with the operator's
    unrestricted credential, on chonk's own subject)."""
    get = msgspec.json.encode(scheduler.GetTimer(key=key))
    reply = await operator.request(scheduler.GET.published_by("chonk"), get, timeout=5)
    return msgspec.json.decode(reply.data)


async def _fire(operator, acks: Acks, key: str) -> datetime:
    """What the scheduler delivers when `key` comes due, sent twice: a redelivery says
    nothing more. The timer's due time."""
    held = await _timer(operator, key)
    assert (held["target"], held["state"]) == ("chase", "pending"), held
    due = datetime.fromisoformat(held["due_at"])
    fired = scheduler.Fired(
        owner="chonk", key=key, target="chase", due_at=due, fired_at=due, late_ms=0.0,
        payload=held["payload"],
    )  # fmt: skip
    for _ in range(2):
        stored = await operator.jetstream().publish(
            timer_subject("chonk", "chase"), msgspec.json.encode(fired)
        )
    await acks.done("chonk", stored)
    return due


async def _count(api, headers: dict, at_least: int) -> list[dict]:
    async def grown() -> list[dict] | None:
        found = [m for ms in (await _rooms_of(api, headers)).values() for m in ms]
        return found if len(found) >= at_least else None

    return await eventually(grown)


async def test_the_ladder_nudges_ben_tells_ana_then_escalates_to_tomas_in_business_hours(
    api, operator, acks
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
    since = asked["seq"] - 1
    (ask,) = await _messages(api, asked["room"], BEN, since)
    assert ask["text"].startswith("Hey Ben, #419 has been waiting") and ask["author_kind"] == "bot"

    # Stage 1 waits four business hours of the tenant's, on the one engine.
    due = datetime.fromisoformat(follow["due_at"])
    assert ladder.due(before, 4, STOCKHOLM) <= due <= ladder.due(datetime.now(UTC), 4, STOCKHOLM)
    assert follow["timer"] == f"chase.{ORG}.run_chase_ben_0908.1"
    assert datetime.fromisoformat((await _timer(operator, follow["timer"]))["due_at"]) == due

    ana_before = sum(len(m) for m in (await _rooms_of(api, ANA)).values())
    tomas_before = sum(len(m) for m in (await _rooms_of(api, TOMAS)).values())

    # Stage 1: the nudge, once, as a question Ben can answer.
    first = await _fire(operator, acks, follow["timer"])

    async def nudged() -> list[dict] | None:
        found = await _messages(api, asked["room"], BEN, since)
        return found if len(found) >= 2 else None

    found = await eventually(nudged)
    assert len(found) == 2 and found[1]["text"].startswith("A nudge on #419")
    assert "\nReceipts\n[1] GitHub lanternfish/core#419" in found[1]["text"]
    assert found[1]["question"]["options"] == list(ladder.REPLIES)
    assert (await api.get(f"/v1/rooms/{asked['room']}", headers=ANA)).status == 404

    # Stage 2, one business day after stage 1 came due: Ana is told and offered another
    # reviewer; Ben hears that she was.
    second_key = f"chase.{ORG}.run_chase_ben_0908.2"
    held = await eventually(lambda: _pending(operator, second_key))
    assert datetime.fromisoformat(held["due_at"]) == ladder.due(first, 8, STOCKHOLM)
    second = await _fire(operator, acks, second_key)
    anas = await _count(api, ANA, ana_before + 1)
    (told_ana,) = [m for m in anas if "#419 is still waiting on Ben" in m["text"]]
    assert told_ana["question"]["options"] == ["Find another reviewer", "Defer it"]
    bens = await eventually(lambda: _at_least(api, asked["room"], 3, since))
    assert bens[2]["text"].startswith("I've let Ana know #419 is still waiting on you")

    # Stage 3: Tomás gets the escalation with the receipts; Ben hears nothing more.
    third_key = f"chase.{ORG}.run_chase_ben_0908.3"
    held = await eventually(lambda: _pending(operator, third_key))
    assert datetime.fromisoformat(held["due_at"]) == ladder.due(second, 4, STOCKHOLM)
    await _fire(operator, acks, third_key)
    tomas = await _count(api, TOMAS, tomas_before + 1)
    (escalation,) = [m for m in tomas if m["text"].startswith("Escalating #419")]
    assert "I won't message Ben about it again" in escalation["text"]
    assert "Receipts\n[1] GitHub lanternfish/core#419" in escalation["text"]
    assert escalation["author"] == f"bot:{ORG}:chonk-build"

    stages = [
        x.data["stage"]
        for x in await records(operator.jetstream(), ORG)
        if x.action == "chonk.chase.stage" and x.target == "run_chase_ben_0908"
    ]
    assert stages == [1, 2, 3]  # each once, though each fire came twice
    assert len(await _messages(api, asked["room"], BEN, since)) == 3


async def test_a_follow_up_at_propose_waits_for_priya_and_bens_answer_ends_the_chase(
    api, operator, acks
):
    """The tenant's modes put the follow-up at PROPOSE: the chase starts on Priya's yes. Ben
    answers the nudge, so stage 2 says nothing to anyone, recorded as the chase's end."""
    r = await api.post(
        "/v1/chonk/runs", json={"tenant": ORG, "run": "chase_ben_answered"}, headers=ROOT
    )
    assert r.status == 201, await r.text()
    report = await r.json()
    (proposed,) = [d for d in report["delivered"] if d.get("class") == "PROPOSE_CONFIRM"]
    assert (proposed["kind"], proposed["decider"]) == ("SCHEDULE_FOLLOWUP", f"{ORG}/priya")
    question = (await _messages(api, proposed["room"], PRIYA))[-1]
    assert question["question"]["options"] == ["Go ahead", "Don't"]
    key = f"chase.{ORG}.run_chase_ben_answered_0915.1"
    assert (await _pending(operator, key)) is None  # nothing timed before her yes

    yes = await api.post(
        f"/v1/rooms/{proposed['room']}/questions/{proposed['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=PRIYA,
    )
    assert yes.status == 201, await yes.text()
    await eventually(lambda: _pending(operator, key))
    await _fire(operator, acks, key)
    ben_room = report["delivered"][0]["room"]

    async def nudge() -> dict | None:
        found = [m for m in await _messages(api, ben_room, BEN) if m.get("question")]
        return found[-1] if found and "A nudge on #419" in found[-1]["text"] else None

    nudged = await eventually(nudge)
    on_it = await api.post(
        f"/v1/rooms/{ben_room}/questions/{nudged['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=BEN,
    )
    assert on_it.status == 201, await on_it.text()
    js = operator.jetstream()

    async def answered() -> bool | None:
        return (
            any(
                x.action == "chonk.chase.answer" and x.target == "run_chase_ben_answered_0915"
                for x in await records(js, ORG)
            )
            or None
        )

    await eventually(answered)
    seen = len(await _messages(api, ben_room, BEN))
    await _fire(operator, acks, key)  # stage 1 delivered again after the answer: said already
    await _fire(operator, acks, f"chase.{ORG}.run_chase_ben_answered_0915.2")

    async def ended() -> list | None:
        found = [
            x for x in await records(js, ORG)
            if x.action == "chonk.chase.end" and x.target == "run_chase_ben_answered_0915"
        ]  # fmt: skip
        return found or None

    (end, *_) = await eventually(ended)
    assert end.data == {"stage": 2, "answered_by": f"{ORG}/ben"}
    assert len(await _messages(api, ben_room, BEN)) == seen
    stages = [
        x.data["stage"] for x in await records(js, ORG)
        if x.action == "chonk.chase.stage" and x.target == "run_chase_ben_answered_0915"
    ]  # fmt: skip
    assert stages == [1]
    assert (await _pending(operator, f"chase.{ORG}.run_chase_ben_answered_0915.3")) is None


async def _pending(operator, key: str) -> dict | None:
    held = await _timer(operator, key)
    return held if held.get("state") == "pending" else None


async def _at_least(api, room: str, n: int, after: int) -> list[dict] | None:
    found = await _messages(api, room, BEN, after)
    return found if len(found) >= n else None
