"""A proposal's yes that could not be carried out is said so to its decider. The Chonk
asked; they said "Go ahead"; carrying it out failed every try (here the scheduler a chase
starts on is away), and the answer was parked. The question read as answered, the
proposal stayed held for an answer that had come, and nothing told them it was not done.
"""

import uuid

import pytest

from libs.audit.reading import records
from libs.contracts import chonk, codec
from services.chonk.carrying import UNDONE
from services.chonk.main import serve as serve_chonk
from services.chonk.store import Proposal
from tests.chonk.conftest import ORG, answered, own_chase, person, said_to
from tests.personal.conftest import eventually
from tests.support import FAST_RETRY, serving


@pytest.fixture
async def scheduler_service():
    """Away: the chase a yes would start cannot be timed."""
    yield None


@pytest.fixture
async def chonk_service(settings_for, audit_service, rooms_service, scheduler_service):
    async with serving(
        chonk.CONTRACT, settings_for("chonk"), lambda svc: serve_chonk(svc, retry=FAST_RETRY)
    ) as svc:
        yield svc


async def test_a_yes_that_could_not_be_carried_out_is_said_so_to_its_decider(api, operator):
    decider = f"{ORG}/decider-{uuid.uuid4().hex[:8]}"  # a room with the Chonk of their own
    chase = own_chase("proposed_away")
    held = Proposal(key=f"{chase.run}-1", decider=decider, chase=chase)
    # Held as the Chonk holds one under its question: each of the simulation's proposing
    # runs is one test's, and this one's must be its own.
    room, seq = f"bot-{uuid.uuid4().hex[:16]}", 7
    js = operator.jetstream()
    kv = await js.key_value("chonk-runs")
    await kv.create(f"proposed.{room}.{seq}", codec.encode(held))
    await answered(operator, ORG, room, seq)  # the decider's "Go ahead"

    async def told() -> list[dict]:
        said = await said_to(api, person(decider.split("/")[1]))
        return [m for m in said if m["text"] == UNDONE]

    [message] = await eventually(told)
    assert message["author"] == f"bot:{ORG}:chonk-build" and message["to"] == decider
    # Let go: an answer delivered later finds nothing to carry out.
    last = await js.get_last_msg("KV_chonk-runs", f"$KV.chonk-runs.proposed.{room}.{seq}")
    assert (last.headers or {}).get("KV-Operation") == "PURGE"
    actions = [(r.action, r.target) for r in await records(js, ORG)]
    assert ("chonk.proposal.approve", held.key) in actions
    assert ("chonk.proposal.approve.failed", held.key) in actions
