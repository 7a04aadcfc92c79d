"""A worker's yes to a shift offer that failed every try carries on once it can. Taking the
shift came first, then telling the worker, the reporter and the scheduling connector; with
the rooms away past every retry, the yes was parked and no one was ever told. The shift
read as taken, so the escalation, when it came due, told no one either: the worker did not
know they were on, and the reporter did not know anyone was coming."""

import uuid
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts import chonk, codec, rooms
from services.chonk.main import serve as serve_chonk
from services.chonk.store import CallOut, Cover, Offer
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.chonk.conftest import answered, said_to, stopped
from tests.chonk.test_ec_mgr_009 import HARBOR, worker
from tests.personal.conftest import eventually
from tests.support import FAST_RETRY, LINES_KEY, parked_holding, serving


@pytest.fixture
async def chonk_service(settings_for, audit_service, rooms_service, scheduler_service):
    async with serving(
        chonk.CONTRACT, settings_for("chonk"), lambda svc: serve_chonk(svc, retry=FAST_RETRY)
    ) as svc:
        yield svc


async def test_a_yes_parked_while_the_rooms_were_away_is_told_once_they_are_back(
    api, operator, rooms_service, settings_for
):
    shift = f"shf_parked_{uuid.uuid4().hex[:8]}"
    out = CallOut(
        org=HARBOR, chonk="ops", title="Chief Operating Orca", shift=shift, station="bar",
        end=datetime.now(UTC) + timedelta(hours=5), reporter=f"{HARBOR}/rep-{shift}",
        reporter_name="Lin", absent_name="Ike", escalate_to=f"{HARBOR}/kwame",
    )  # fmt: skip
    name = f"w{uuid.uuid4().hex[:8]}"
    offer = Offer(org=HARBOR, shift=shift, worker=f"{HARBOR}/{name}", name=name.title())
    room, seq = f"bot-{uuid.uuid4().hex[:16]}", 5  # the offer's question, as held
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")
    await kv.create(f"cover.{HARBOR}.{shift}", codec.encode(Cover(call_out=out)))
    await kv.create(f"offered.{room}.{seq}", codec.encode(offer))
    await stopped(operator, rooms_service, rooms.TELL.published_by("chonk"))
    await answered(operator, HARBOR, room, seq)  # the worker's yes
    await eventually(lambda: parked_holding(operator, "chonk.chonk", room), timeout=30)
    cover = msgspec.json.decode((await kv.get(f"cover.{HARBOR}.{shift}")).value)
    assert cover["taken_by"] == offer.worker  # taken, and no one told
    sealer = Sealer.from_hex(LINES_KEY)
    async with serving(rooms.CONTRACT, settings_for("rooms"), lambda s: serve_rooms(s, sealer)):

        async def told(headers: dict, start: str) -> list[dict]:
            return [m for m in await said_to(api, headers) if m["text"].startswith(start)]

        [thanks] = await eventually(lambda: told(worker(name), "Thank you"), timeout=30)
        assert f"you're on the bar tonight until {out.end:%H:%M}" in thanks["text"]
        reporter = worker(f"rep-{shift}")
        [coming] = await eventually(lambda: told(reporter, offer.name), timeout=30)
        assert coming["text"].endswith(f"is coming in to cover the bar until {out.end:%H:%M}.")
