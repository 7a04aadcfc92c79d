"""hip-0524 §5's amplification ceiling: at `send`, an agent's replies that leave by a
line's room unattended are at most ten in any hour; past it a reply is asked as a
confirmation. An agent answering an auto-responder across a line stops at its person,
rather than texting on the person's line without end. A room of no line has no ceiling:
no agent answers what an agent or a bot writes there."""

import asyncio
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from libs.contracts.rooms import ROOMS
from services.ladder.domain.unattended import (
    HOUR,
    MOST,
    QUESTION,
    Unattended,
    admits,
    counted,
)
from tests.personal.conftest import eventually, history, room_with, say, set_level
from tests.personal.test_hip0524_09_personal_line import sms
from tests.personal.test_line_limits import ALICE, _talking


async def test_ten_replies_an_hour_leave_by_a_line_unattended_and_the_next_is_asked(
    api, operator, people
):
    line, room = await _talking(api, operator, people, "send")
    changed = await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    assert changed.status == 200, await changed.text()

    async def replied(seq: int) -> list[dict]:
        """What answered `seq` and left (not the question put to Ada alone)."""
        found = await history(api, room, people.ada)
        return [m for m in found if m.get("reply_to") == seq and not m.get("private")]

    for n in range(MOST):  # an auto-responder, say, answering every text
        arrived = await (await sms(api, line, ALICE, f"Auto-reply {n}: I am away")).json()
        [reply] = await eventually(lambda seq=arrived["seq"]: replied(seq))
        assert (reply["author_kind"], reply["delivery"]["transport"]) == ("agent", "sms")

    outbound = f"rooms.outbound.sms.{people.org}"
    left = (await operator.jetstream().stream_info(ROOMS.name, subjects_filter=outbound)).state
    eleventh = await (await sms(api, line, ALICE, "Auto-reply: I am away")).json()

    async def asked_of_ada() -> list[dict]:
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return [c for c in listed["confirmations"] if c["reply_to"] == eleventh["seq"]]

    [confirmation] = await eventually(asked_of_ada)
    assert confirmation["room"] == room["id"]
    [question] = [m for m in await history(api, room, people.ada) if m.get("question")
                  and m["seq"] == confirmation["question_seq"]]  # fmt: skip
    assert question["text"] == QUESTION  # why she is asked at send
    assert await replied(eleventh["seq"]) == []  # asked, so nothing left unattended
    after = (await operator.jetstream().stream_info(ROOMS.name, subjects_filter=outbound)).state
    assert after.subjects == left.subjects


async def test_fifteen_texts_at_once_let_ten_replies_go_and_ask_five(api, operator, people):
    """Never over the ceiling, however many replies are routed at the same moment: each is
    counted by compare-and-set."""
    line, room = await _talking(api, operator, people, "send")
    changed = await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    assert changed.status == 200, await changed.text()
    texts = [sms(api, line, ALICE, f"Auto-reply {n}") for n in range(MOST + 5)]
    arrived = {(await r.json())["seq"] for r in await asyncio.gather(*texts)}

    async def settled() -> tuple[list[dict], list[dict]] | None:
        found = await history(api, room, people.ada)
        sent = [m for m in found if m.get("reply_to") in arrived and not m.get("private")]
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        asked = [c for c in listed["confirmations"] if c["reply_to"] in arrived]
        return (sent, asked) if len(sent) + len(asked) == len(arrived) else None

    sent, asked = await eventually(settled, timeout=30)
    assert (len(sent), len(asked)) == (MOST, 5)


async def test_sends_the_person_took_over_or_that_closed_below_send_leave_the_count(
    api, operator, people
):
    """Counted as each window opened, so that windows open at once cannot outrun the
    ceiling, a send the person stopped, edited or replaced, or whose window closed below
    send, did not leave unattended: it leaves the hour's count. Before, ten windows Ada had
    stopped in an hour made her agent ask her, not offer a window, for an hour."""
    line, room = await _talking(api, operator, people, "send")
    changed = await api.put("/v1/ladder/window", json={"window": "15m"}, headers=people.ada)
    assert changed.status == 200, await changed.text()

    async def window_for(seq: int) -> dict | None:
        listed = await (await api.get("/v1/windows", headers=people.ada)).json()
        return next((w for w in listed["windows"] if w["reply_to"] == seq), None)

    acts = ("stop", "edit", "replace")
    for n in range(MOST):
        arrived = await (await sms(api, line, ALICE, f"Question {n}?")).json()
        window = await eventually(lambda seq=arrived["seq"]: window_for(seq))
        act = acts[n % len(acts)]
        body = {} if act == "stop" else {"text": f"Ada's own answer {n}"}
        taken = await api.post(f"/v1/windows/{window['id']}/{act}", json=body, headers=people.ada)
        assert taken.status in (200, 201), await taken.text()
    # And one closed below send: opened, then Ada lowers to confirm and back.
    arrived = await (await sms(api, line, ALICE, "One more?")).json()
    await eventually(lambda: window_for(arrived["seq"]))
    await set_level(api, people.ada, "confirm")
    await set_level(api, people.ada, "send")
    eleventh = await (await sms(api, line, ALICE, "And now?")).json()
    window = await eventually(lambda: window_for(eleventh["seq"]))
    assert window["state"] == "open"  # a window, not a question
    listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
    assert [c for c in listed["confirmations"] if c["room"] == room["id"]] == []


async def test_a_room_of_no_line_has_no_ceiling(api, operator, people):
    await _talking(api, operator, people, "send")
    changed = await api.put("/v1/ladder/window", json={"window": "instant"}, headers=people.ada)
    assert changed.status == 200, await changed.text()
    room = await room_with(api, people, people.bob_id)
    for n in range(MOST + 1):
        asked = await say(api, room, people.bob, f"And {n}?", to=people.ada_id)

        async def replied(seq: int = asked["seq"]) -> list[dict]:
            found = await history(api, room, people.bob)
            return [m for m in found if m.get("reply_to") == seq]

        [reply] = await eventually(replied)
        assert reply["author_kind"] == "agent"


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 7_200)), max_size=60))
def test_no_hour_admits_more_than_the_most_and_a_reply_counted_stays_counted(replies):
    """Replies (some routed again) at any times, in order: no hour-long span lets more than
    MOST go, and a reply let go is let go again, not counted again, while its hour lasts."""
    start = datetime(2026, 12, 4, tzinfo=UTC)
    hour, let_go, since = Unattended(), [], {}
    for reply, at in sorted(replies, key=lambda r: r[1]):
        now, key = start + timedelta(seconds=at), str(reply)
        hour = counted(hour, key, now)
        if key in since and now - since[key] < HOUR:
            assert admits(hour, key) and hour.sent[key] == since[key]
        elif admits(hour, key):
            since[key] = now
            let_go.append(now)
    for i, first in enumerate(let_go):
        assert len([t for t in let_go[i:] if t - first < HOUR]) <= MOST
