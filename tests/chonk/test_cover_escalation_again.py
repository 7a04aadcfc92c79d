"""A call-out's escalation that could not be sent is sent when its fire comes again. The
cover was closed first and the escalation contact told after: with the rooms away at that
moment, telling failed, and the fire delivered again found the cover closed and told no
one. In EC-MGR-009 that is Kwame never hearing that the bar has no one."""

import uuid
from datetime import UTC, datetime, timedelta

import msgspec
from nats.errors import NoRespondersError

from libs.audit.reading import records
from libs.contracts import codec, rooms
from services.chonk.covering import CoverDue
from services.chonk.store import CallOut, Cover
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.chonk.conftest import fire, taken_back
from tests.chonk.test_ec_mgr_009 import HARBOR, worker
from tests.personal.conftest import eventually
from tests.support import LINES_KEY, serving


async def test_an_escalation_the_rooms_could_not_take_is_sent_once_they_are_back(
    api, operator, rooms_service, settings_for
):
    shift, contact = f"shf_probe_{uuid.uuid4().hex[:8]}", f"esc-{uuid.uuid4().hex[:8]}"
    out = CallOut(
        org=HARBOR, chonk="ops", title="Chief Operating Orca", shift=shift, station="bar",
        end=datetime.now(UTC) + timedelta(hours=5), reporter=f"{HARBOR}/lin",
        reporter_name="Lin", absent_name="Ike", escalate_to=f"{HARBOR}/{contact}",
    )  # fmt: skip
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")  # a call-out of its own, as the Chonk holds one
    await kv.create(f"cover.{HARBOR}.{shift}", codec.encode(Cover(call_out=out)))
    rooms_service.stop()

    async def away() -> bool:
        """No replica serves the subject the escalation is told by (asked with a body
        it refuses, so a replica still there tells no one)."""
        try:
            await operator.request(rooms.TELL.published_by("chonk"), b"{}", timeout=1)
        except NoRespondersError:
            return True
        return False

    await eventually(away)
    due = datetime.now(UTC)
    payload = msgspec.to_builtins(CoverDue(org=HARBOR, shift=shift))
    js, stored = await fire(operator, f"cover.{HARBOR}.{shift}", "cover", due, payload)

    async def tried() -> bool:
        """Handled while the rooms are away: handed back to be tried again, or done with."""
        info = await js.consumer_info(stored.stream, "chonk")
        return info.num_redelivered > 0 or info.ack_floor.stream_seq >= stored.seq

    await eventually(tried)
    sealer = Sealer.from_hex(LINES_KEY)
    async with serving(rooms.CONTRACT, settings_for("rooms"), lambda s: serve_rooms(s, sealer)):

        async def told() -> list[dict]:
            headers = worker(contact)
            found = (await (await api.get("/v1/rooms", headers=headers)).json())["rooms"]
            said = []
            for room in found:
                page = await api.get(f"/v1/rooms/{room['id']}/messages", headers=headers)
                said += (await page.json())["messages"]
            return [m for m in said if m["text"].startswith("No cover yet for the bar")]

        [escalation] = await eventually(told, timeout=30)
        assert "Ike is not in and no one has said yes" in escalation["text"]
        actions = [r.action for r in await records(js, HARBOR) if r.target == shift]
        tried, failed = (
            actions.count("chonk.cover.escalate"),
            actions.count("chonk.cover.escalate.failed"),
        )
        assert failed >= 1 and tried - failed == 1  # each try recorded; one escalation made
        await taken_back(operator, js, stored)
