"""A chase's answer is recorded before it ends the chase. It was recorded after: with the
audit away at that moment, the chase ended, the record failed, and the answer delivered
again found the chase over and recorded nothing. The trail never had it."""

import uuid

import msgspec
from nats.errors import NoRespondersError

from libs.audit.reading import records
from libs.contracts import audit, codec
from libs.contracts.rooms import ANSWER_STORED, MessageStored, Pick
from services.audit.main import serve as serve_audit
from services.chonk.store import Chased
from tests.chonk.conftest import ORG
from tests.personal.conftest import eventually
from tests.support import serving


async def test_an_answer_made_while_the_audit_is_away_is_recorded_once_it_is_back(
    api, operator, audit_service, settings_for
):
    run = f"run_chase_answered_{uuid.uuid4().hex[:8]}"
    room, seq = f"bot-{uuid.uuid4().hex[:16]}", 3
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")  # the question, as the chase's stage holds it
    await kv.create(f"chased.{room}.{seq}", codec.encode(Chased(ORG, run, f"{ORG}/ben")))
    audit_service.stop()

    async def away() -> bool:
        try:
            await operator.request(audit.CONTRACT.health.published_by("test"), b"{}", timeout=1)
        except NoRespondersError:
            return True
        return False

    await eventually(away)
    answer = MessageStored(
        org=ORG, room=room, seq=seq + 1, author_kind="human", to=None, answerer=None,
        first_contact=False, answers=seq, choice=Pick(option=0),
    )  # fmt: skip
    stored = await js.publish(ANSWER_STORED.name, codec.encode(answer))

    async def tried() -> bool:
        """Handled while the audit is away: handed back to be tried again, or done with."""
        info = await js.consumer_info(stored.stream, "chonk")
        return info.num_redelivered > 0 or info.ack_floor.stream_seq >= stored.seq

    await eventually(tried)
    async with serving(audit.CONTRACT, settings_for("audit"), serve_audit):

        async def recorded() -> list:
            found = await records(js, ORG)
            return [r for r in found if r.action == "chonk.chase.answer" and r.target == run]

        [record] = await eventually(recorded, timeout=30)
        assert record.actor is not None and record.actor.sub == f"{ORG}/ben"
        state = msgspec.json.decode((await kv.get(f"chase.{ORG}.{run}")).value)
        assert state["answered_by"] == f"{ORG}/ben"
