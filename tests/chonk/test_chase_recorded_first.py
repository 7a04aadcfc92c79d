"""A chase's answer, and its end, are recorded as they change the chase, never after. Each
was recorded after: with the audit away at that moment, the chase changed, the record
failed, and the delivery again found the chase changed and recorded nothing. The trail
never had them."""

import uuid
from datetime import UTC, datetime

import msgspec

from libs.audit.reading import records
from libs.contracts import audit, codec
from services.audit.main import serve as serve_audit
from services.chonk.store import Chased, ChaseState
from tests.chonk.conftest import ORG, answered, fire, own_chase, stopped, taken_back
from tests.personal.conftest import eventually
from tests.support import serving


async def _recorded(js, action: str, run: str) -> list:
    async def found() -> list:
        return [r for r in await records(js, ORG) if r.action == action and r.target == run]

    return await eventually(found, timeout=30)


async def test_an_answer_made_while_the_audit_is_away_is_recorded_once_it_is_back(
    api, operator, audit_service, settings_for, acks
):
    run = f"run_chase_answered_{uuid.uuid4().hex[:8]}"
    room, seq = f"bot-{uuid.uuid4().hex[:16]}", 3
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")  # the question, as the chase's stage holds it
    await kv.create(f"chased.{room}.{seq}", codec.encode(Chased(ORG, run, f"{ORG}/ben")))
    await stopped(operator, audit_service, audit.CONTRACT.health.published_by("test"))
    js, stored = await answered(operator, ORG, room, seq)  # Ben's answer
    await acks.tried("chonk", stored)
    async with serving(audit.CONTRACT, settings_for("audit"), serve_audit):
        [record] = await _recorded(js, "chonk.chase.answer", run)
        assert record.actor is not None and record.actor.sub == f"{ORG}/ben"
        state = msgspec.json.decode((await kv.get(f"chase.{ORG}.{run}")).value)
        assert state["answered_by"] == f"{ORG}/ben"


async def test_a_stage_that_ends_an_answered_chase_while_the_audit_is_away_records_the_end(
    api, operator, audit_service, settings_for, acks
):
    chase = own_chase("chase_ended")
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")  # answered before its stage comes due
    await kv.create(f"chase.{ORG}.{chase.run}", codec.encode(ChaseState(answered_by=chase.owner)))
    await stopped(operator, audit_service, audit.CONTRACT.health.published_by("test"))
    key = f"chase.{chase.org}.{chase.run}.1"
    js, stored = await fire(operator, key, "chase", datetime.now(UTC), msgspec.to_builtins(chase))
    await acks.tried("chonk", stored)
    async with serving(audit.CONTRACT, settings_for("audit"), serve_audit):
        [record] = await _recorded(js, "chonk.chase.end", chase.run)
        assert record.data["answered_by"] == chase.owner
        state = msgspec.json.decode((await kv.get(f"chase.{ORG}.{chase.run}")).value)
        assert state["ended"] is True
        await taken_back(operator, js, stored)
