"""A yes that comes after a call-out's escalation: the escalation contact hears the shift is
covered. Told "It needs you now", before they were never told anything more, and would
still be finding someone, or coming in themself. One who was never told (the shift was
taken before the escalation came due) hears nothing."""

import uuid
from datetime import UTC, datetime, timedelta

import msgspec

from libs.contracts import codec
from services.chonk.covering import CoverDue
from services.chonk.store import CallOut, Cover, Offer
from tests.chonk.conftest import answered, fire, said_to
from tests.chonk.test_ec_mgr_009 import HARBOR, worker
from tests.personal.conftest import eventually


async def _held(operator, *, taken: bool = False, **cover: object) -> tuple:
    """A call-out of its own, its cover as `cover` says (`taken` by the worker offered),
    and one worker's offer."""
    shift, contact = f"shf_late_{uuid.uuid4().hex[:8]}", f"esc-{uuid.uuid4().hex[:8]}"
    out = CallOut(
        org=HARBOR, chonk="ops", title="Chief Operating Orca", shift=shift, station="bar",
        end=datetime.now(UTC) + timedelta(hours=5), reporter=f"{HARBOR}/rep-{shift}",
        reporter_name="Lin", absent_name="Ike", escalate_to=f"{HARBOR}/{contact}",
    )  # fmt: skip
    name = f"w{uuid.uuid4().hex[:8]}"
    offer = Offer(org=HARBOR, shift=shift, worker=f"{HARBOR}/{name}", name=name.title())
    room, seq = f"bot-{uuid.uuid4().hex[:16]}", 5  # the offer's question, as held
    kv = await operator.jetstream().key_value("chonk-runs")
    if taken:
        cover["taken_by"] = offer.worker
    await kv.create(f"cover.{HARBOR}.{shift}", codec.encode(Cover(call_out=out, **cover)))
    await kv.create(f"offered.{room}.{seq}", codec.encode(offer))
    return out, offer, room, seq


async def _done(js, stored) -> None:
    async def acked() -> bool:
        return (await js.consumer_info(stored.stream, "chonk")).ack_floor.stream_seq >= stored.seq

    await eventually(acked)


async def test_a_yes_after_the_escalation_is_told_to_the_escalation_contact(api, operator):
    out, offer, room, seq = await _held(operator)
    payload = msgspec.to_builtins(CoverDue(org=HARBOR, shift=out.shift))
    key = f"cover.{HARBOR}.{out.shift}"
    js, due = await fire(operator, key, "cover", datetime.now(UTC), payload)
    await _done(js, due)  # no one had said yes: escalated
    js, stored = await answered(operator, HARBOR, room, seq)
    await _done(js, stored)
    contact = worker(out.escalate_to.rsplit("/", 1)[1])
    escalation, update = [m["text"] for m in await said_to(api, contact)]
    assert escalation.startswith("No cover yet for the bar")
    assert update == f"Update: {offer.name} is coming in to cover the bar until {out.end:%H:%M}."
    thanks = [m["text"] for m in await said_to(api, worker(offer.worker.rsplit("/", 1)[1]))]
    assert len(thanks) == 1 and thanks[0].startswith(f"Thank you, {offer.name}")


async def test_a_contact_never_told_of_the_call_out_hears_nothing_of_its_yes(api, operator):
    """Taken before its time ran out, the cover closed as covered: the taker's yes,
    delivered again, carries on as before and says nothing to the contact."""
    out, offer, room, seq = await _held(operator, closed=True, taken=True)
    js, stored = await answered(operator, HARBOR, room, seq)
    await _done(js, stored)
    thanks = [m["text"] for m in await said_to(api, worker(offer.worker.rsplit("/", 1)[1]))]
    assert len(thanks) == 1 and thanks[0].startswith(f"Thank you, {offer.name}")
    assert await said_to(api, worker(out.escalate_to.rsplit("/", 1)[1])) == []
