"""A yes that comes after a call-out's escalation: the escalation contact hears the shift is
covered. Told "It needs you now", before they were never told anything more, and would
still be finding someone, or coming in themself. One who was never told (the shift was
taken before the escalation came due) hears nothing."""

from datetime import UTC, datetime

import msgspec

from services.chonk.covering import CoverDue
from tests.chonk.conftest import HARBOR, answered, fire, offered, said_to, worker


async def test_a_yes_after_the_escalation_is_told_to_the_escalation_contact(api, operator, acks):
    out, offer, room, seq = await offered(operator)
    payload = msgspec.to_builtins(CoverDue(org=HARBOR, shift=out.shift))
    key = f"cover.{HARBOR}.{out.shift}"
    _, due = await fire(operator, key, "cover", datetime.now(UTC), payload)
    await acks.done("chonk", due)  # no one had said yes: escalated
    _, stored = await answered(operator, HARBOR, room, seq)
    await acks.done("chonk", stored)
    contact = worker(out.escalate_to.rsplit("/", 1)[1])
    escalation, update = [m["text"] for m in await said_to(api, contact)]
    assert escalation.startswith("No cover yet for the bar")
    assert update == f"Update: {offer.name} is coming in to cover the bar until {out.end:%H:%M}."
    thanks = [m["text"] for m in await said_to(api, worker(offer.worker.rsplit("/", 1)[1]))]
    assert len(thanks) == 1 and thanks[0].startswith(f"Thank you, {offer.name}")


async def test_a_contact_never_told_of_the_call_out_hears_nothing_of_its_yes(api, operator, acks):
    """Taken before its time ran out, the cover closed as covered: the taker's yes,
    delivered again, carries on as before and says nothing to the contact."""
    out, offer, room, seq = await offered(operator, closed=True, taken=True)
    _, stored = await answered(operator, HARBOR, room, seq)
    await acks.done("chonk", stored)
    thanks = [m["text"] for m in await said_to(api, worker(offer.worker.rsplit("/", 1)[1]))]
    assert len(thanks) == 1 and thanks[0].startswith(f"Thank you, {offer.name}")
    assert await said_to(api, worker(out.escalate_to.rsplit("/", 1)[1])) == []
