"""A chase's next stage asks the rooms for an answer to its questions before it speaks. An
answer the room took, whose event the Chonks had not read (the service away across the
stage's due time, and the stage's fire read first), used to be chased again: Ana told
#419 was still waiting on Ben, and Tomas escalated to four hours later, though Ben had
answered."""

import uuid
from datetime import UTC, datetime

import msgspec

from libs.contracts import chonk, rooms
from services.chonk.main import serve as serve_chonk
from tests.chonk.conftest import ORG, cancelled, fire, own_chase, person, said_to, stopped
from tests.support import published_from_now, serving


async def test_an_answer_unread_when_the_next_stage_comes_ends_the_chase(
    api, operator, chonk_service, settings_for, acks
):
    mark = uuid.uuid4().hex[:8]
    owner, requester = f"owner-{mark}", f"requester-{mark}"  # rooms no other test reads
    chase = msgspec.structs.replace(
        own_chase("answered_unread"), item=f"#{mark}", followup=f"A nudge on #{mark}.",
        owner=f"{ORG}/{owner}", requester=f"{ORG}/{requester}",
    )  # fmt: skip
    js = operator.jetstream()
    later = [f"chase.{chase.org}.{chase.run}.{stage}" for stage in (2, 3)]
    try:
        key = f"chase.{chase.org}.{chase.run}.1"
        _, first = await fire(operator, key, "chase", datetime.now(UTC), msgspec.to_builtins(chase))
        await acks.done("chonk", first)  # stage 1 asked Ben, its stage 2 timed
        ben = person(owner)
        [asked] = [m for m in await said_to(api, ben) if m["text"] == chase.followup]
        await stopped(operator, chonk_service, chonk.REPORT.name)
        events = await published_from_now(js, rooms.ANSWER_STORED.name)
        answer = await api.post(
            f"/v1/rooms/{asked['room']}/questions/{asked['seq']}/answer",
            json={"choice": {"type": "pick", "option": 0}},
            headers=ben,
        )
        assert answer.status == 201, await answer.text()
        event = await events.next_msg(timeout=10)
        await js.delete_msg(event.metadata.stream, event.metadata.sequence.stream)
        async with serving(chonk.CONTRACT, settings_for("chonk"), serve_chonk):
            payload = msgspec.to_builtins(msgspec.structs.replace(chase, stage=2))
            _, second = await fire(operator, later[0], "chase", datetime.now(UTC), payload)
            await acks.done("chonk", second)
            told = await said_to(api, person(requester))
            assert told == []  # before: "#… is still waiting on Ben"
            kv = await js.key_value("chonk-runs")
            state = msgspec.json.decode((await kv.get(f"chase.{ORG}.{chase.run}")).value)
            assert (state["answered_by"], state.get("ended")) == (chase.owner, True)
    finally:
        await cancelled(operator, *later)
