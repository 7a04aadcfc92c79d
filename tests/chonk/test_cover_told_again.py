"""What a call-out's cover says, said when the rooms are back. In EC-MGR-009 the cover's
escalation, and the thanks and swap after a worker's yes, each came after a claim made
with a compare-and-set (the cover closed, the shift taken). With the rooms away at that
moment, telling failed; the next delivery found the claim made and said nothing. Kwame
never heard the bar had no one; a worker who said yes was never told they were on, the
reporter never told who was coming, and no swap was published."""

from datetime import UTC, datetime

import msgspec

from libs.audit.reading import records
from libs.contracts import codec, rooms
from services.chonk.covering import CoverDue
from services.chonk.store import Cover
from tests.chonk.conftest import (
    HARBOR,
    answered,
    call_out,
    fire,
    offered,
    rooms_back,
    said_to,
    stopped,
    taken_back,
    worker,
)
from tests.personal.conftest import eventually


async def _said(api, name: str, start: str) -> list[dict]:
    return [m for m in await said_to(api, worker(name)) if m["text"].startswith(start)]


async def test_an_escalation_the_rooms_could_not_take_is_sent_once_they_are_back(
    api, operator, rooms_service, settings_for, acks
):
    out, contact = call_out()
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")  # held as the Chonk holds a call-out's cover
    await kv.create(f"cover.{HARBOR}.{out.shift}", codec.encode(Cover(call_out=out)))
    await stopped(operator, rooms_service, rooms.TELL.published_by("chonk"))
    payload = msgspec.to_builtins(CoverDue(org=HARBOR, shift=out.shift))
    key = f"cover.{HARBOR}.{out.shift}"
    js, stored = await fire(operator, key, "cover", datetime.now(UTC), payload)
    await acks.tried("chonk", stored)
    async with rooms_back(settings_for):
        [escalation] = await eventually(lambda: _said(api, contact, "No cover yet"), timeout=30)
        assert "Ike is not in and no one has said yes" in escalation["text"]
        actions = [r.action for r in await records(js, HARBOR) if r.target == out.shift]
        tried, failed = (
            actions.count("chonk.cover.escalate"), actions.count("chonk.cover.escalate.failed")
        )  # fmt: skip
        assert failed >= 1 and tried - failed == 1  # each try recorded; one escalation made
        await taken_back(operator, js, stored)


async def test_a_yes_that_took_the_shift_is_told_once_the_rooms_are_back(
    api, operator, rooms_service, settings_for, acks
):
    out, offer, room, seq = await offered(operator)
    name = offer.worker.rsplit("/", 1)[1]
    await stopped(operator, rooms_service, rooms.TELL.published_by("chonk"))
    js, stored = await answered(operator, HARBOR, room, seq)  # the worker's yes
    await acks.tried("chonk", stored)
    async with rooms_back(settings_for):
        [thanks] = await eventually(lambda: _said(api, name, "Thank you"), timeout=30)
        assert f"you're on the bar tonight until {out.end:%H:%M}" in thanks["text"]
        kv = await js.key_value("chonk-runs")
        cover = msgspec.json.decode((await kv.get(f"cover.{HARBOR}.{out.shift}")).value)
        assert cover["taken_by"] == offer.worker


async def test_a_yes_that_took_the_shift_delivered_again_is_recorded_once(api, operator, acks):
    """Told, and delivered again (its ack lost, a replica gone): the shift taken is
    recorded once, as it was taken once."""
    out, offer, room, seq = await offered(operator)
    name = offer.worker.rsplit("/", 1)[1]
    js, first = await answered(operator, HARBOR, room, seq)
    await acks.tried("chonk", first)
    [thanks] = await eventually(lambda: _said(api, name, "Thank you"))
    _, again = await answered(operator, HARBOR, room, seq)
    await acks.tried("chonk", again)
    taken = [
        r for r in await records(js, HARBOR)
        if r.action == "chonk.cover.taken" and r.target == out.shift
    ]  # fmt: skip
    assert [r.data for r in taken] == [{"by": offer.worker}]
    assert await _said(api, name, "Thank you") == [thanks]
