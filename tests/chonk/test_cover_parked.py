"""What a call-out's cover says when telling failed past every try (the rooms away for
longer than the retries): done again until the rooms take it. Before, the message was
parked and dropped.

- The escalation: the cover reopened for a fire that never came again, and the escalation
  contact was never told the bar had no one.
- A worker's yes: it took the shift first, so no one was told, not the worker, not the
  reporter, not the scheduling connector; and the escalation, finding the shift taken,
  told no one either."""

from datetime import UTC, datetime

import msgspec
import pytest

from libs.contracts import chonk, codec, rooms
from services.chonk.covering import CoverDue
from services.chonk.main import serve as serve_chonk
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
    worker,
)
from tests.personal.conftest import eventually
from tests.support import FAST_RETRY, parked_holding, serving


@pytest.fixture
async def chonk_service(settings_for, audit_service, rooms_service, scheduler_service):
    serve = lambda svc: serve_chonk(svc, retry=FAST_RETRY)  # noqa: E731
    async with serving(chonk.CONTRACT, settings_for("chonk"), serve) as svc:
        yield svc


async def _told(api, headers: dict, start: str) -> list[str]:
    return [m["text"] for m in await said_to(api, headers) if m["text"].startswith(start)]


async def test_an_escalation_parked_while_the_rooms_were_away_is_sent_once_they_are_back(
    api, operator, rooms_service, settings_for
):
    out, contact = call_out()
    kv = await operator.jetstream().key_value("chonk-runs")
    await kv.create(f"cover.{HARBOR}.{out.shift}", codec.encode(Cover(call_out=out)))
    await stopped(operator, rooms_service, rooms.TELL.published_by("chonk"))
    payload = msgspec.to_builtins(CoverDue(org=HARBOR, shift=out.shift))
    await fire(operator, f"cover.{HARBOR}.{out.shift}", "cover", datetime.now(UTC), payload)
    await eventually(lambda: parked_holding(operator, "chonk.chonk", out.shift), timeout=30)
    async with rooms_back(settings_for):
        [escalation] = await eventually(
            lambda: _told(api, worker(contact), "No cover yet"), timeout=30
        )
    assert "Ike is not in and no one has said yes" in escalation


async def test_a_yes_parked_while_the_rooms_were_away_is_told_once_they_are_back(
    api, operator, rooms_service, settings_for
):
    out, offer, room, seq = await offered(operator)
    await stopped(operator, rooms_service, rooms.TELL.published_by("chonk"))
    await answered(operator, HARBOR, room, seq)  # the worker's yes
    await eventually(lambda: parked_holding(operator, "chonk.chonk", room), timeout=30)
    kv = await operator.jetstream().key_value("chonk-runs")
    cover = msgspec.json.decode((await kv.get(f"cover.{HARBOR}.{out.shift}")).value)
    assert cover["taken_by"] == offer.worker  # taken, and no one told
    async with rooms_back(settings_for):
        name = offer.worker.rsplit("/", 1)[1]
        [thanks] = await eventually(lambda: _told(api, worker(name), "Thank you"), timeout=30)
        assert f"you're on the bar tonight until {out.end:%H:%M}" in thanks
        reporter = worker(out.reporter.rsplit("/", 1)[1])
        [coming] = await eventually(lambda: _told(api, reporter, offer.name), timeout=30)
        assert coming.endswith(f"is coming in to cover the bar until {out.end:%H:%M}.")
