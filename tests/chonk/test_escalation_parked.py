"""A call-out's escalation that failed every try is sent once the rooms are back. With the
rooms away past every retry, the fire was parked and dropped, the cover reopened, and no
fire came again: Kwame was never told the bar had no one."""

import uuid
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts import chonk, codec, rooms
from services.chonk.covering import CoverDue
from services.chonk.main import serve as serve_chonk
from services.chonk.store import CallOut, Cover
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.chonk.conftest import fire, said_to, stopped
from tests.chonk.test_ec_mgr_009 import HARBOR, worker
from tests.personal.conftest import eventually
from tests.support import FAST_RETRY, LINES_KEY, parked_holding, serving


@pytest.fixture
async def chonk_service(settings_for, audit_service, rooms_service, scheduler_service):
    async with serving(
        chonk.CONTRACT, settings_for("chonk"), lambda svc: serve_chonk(svc, retry=FAST_RETRY)
    ) as svc:
        yield svc


async def test_an_escalation_parked_while_the_rooms_were_away_is_sent_once_they_are_back(
    api, operator, rooms_service, settings_for
):
    shift, contact = f"shf_esc_{uuid.uuid4().hex[:8]}", f"esc-{uuid.uuid4().hex[:8]}"
    out = CallOut(
        org=HARBOR, chonk="ops", title="Chief Operating Orca", shift=shift, station="bar",
        end=datetime.now(UTC) + timedelta(hours=5), reporter=f"{HARBOR}/rep-{shift}",
        reporter_name="Lin", absent_name="Ike", escalate_to=f"{HARBOR}/{contact}",
    )  # fmt: skip
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")  # held as the Chonk holds a call-out's cover
    await kv.create(f"cover.{HARBOR}.{shift}", codec.encode(Cover(call_out=out)))
    await stopped(operator, rooms_service, rooms.TELL.published_by("chonk"))
    payload = msgspec.to_builtins(CoverDue(org=HARBOR, shift=shift))
    await fire(operator, f"cover.{HARBOR}.{shift}", "cover", datetime.now(UTC), payload)
    await eventually(lambda: parked_holding(operator, "chonk.chonk", shift), timeout=30)
    sealer = Sealer.from_hex(LINES_KEY)
    async with serving(rooms.CONTRACT, settings_for("rooms"), lambda s: serve_rooms(s, sealer)):

        async def told() -> list[str]:
            said = await said_to(api, worker(contact))
            return [m["text"] for m in said if m["text"].startswith("No cover yet")]

        [escalation] = await eventually(told, timeout=30)
    assert "Ike is not in and no one has said yes" in escalation
