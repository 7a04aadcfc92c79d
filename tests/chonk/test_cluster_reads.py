"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers with what was there before (tests/runtime/test_latest.py). The
Chonks' reads have every acknowledged write in them: an answer to a proposal just put is
the proposal's (read from a replica behind, the decider's yes was dropped as an answer to
nothing), a decline just stored is counted towards triage, and a fact just written is
what its person reads."""

from datetime import UTC, datetime
from functools import partial

import pytest

from libs.contracts.chonk import HandoffRequest
from services.chonk.domain.memory import MemoryFact
from services.chonk.domain.types import SourceRef
from services.chonk.store import ChonkStore, Proposal, open_store
from tests.support import asked_again

NOW = datetime(2026, 12, 3, tzinfo=UTC)

WRITES = 2000  # a direct get missed 16 to 117 of 3,000 such reads (bench/exact_reads.py)


@pytest.fixture
async def stores(two_nodes) -> tuple[ChonkStore, ChonkStore]:
    """The Chonks' store on the node that writes, and on another."""
    return tuple([await open_store(nc.jetstream(), replicas=3) for nc in two_nodes])


async def test_a_proposal_just_put_is_found_by_its_answer_from_another_node(stores):
    store, elsewhere = stores
    missed = []
    for seq in range(WRITES):
        proposal = Proposal(key=f"run-{seq}", decider="acme/ada")
        await asked_again(store.put_proposal, "r-00000000000000c1", seq, proposal)
        if await asked_again(elsewhere.proposal, "r-00000000000000c1", seq) != proposal:
            missed.append(seq)
    assert missed == []


async def test_a_decline_just_stored_is_counted_from_another_node(stores):
    store, elsewhere = stores
    missed = []
    for n in range(WRITES):
        declined = _handoff(f"tenant-{n}")
        await asked_again(store.put_decline, declined)
        if await asked_again(elsewhere.declines, declined.tenant_id) != [declined]:
            missed.append(n)
    assert missed == []


async def test_a_fact_just_written_is_read_from_another_node(stores):
    store, elsewhere = stores
    missed = []
    for n in range(WRITES):
        fact = _fact(f"fact-{n}")
        write = partial(store.change_fact, "acme", f"acme/p{n}", fact.id, lambda _, f=fact: f)
        await asked_again(partial(write, now=NOW))
        if await asked_again(elsewhere.facts, "acme", f"acme/p{n}") != [fact]:
            missed.append(n)
    assert missed == []


def _handoff(tenant: str) -> HandoffRequest:
    return HandoffRequest(
        id="hof_1",
        tenant_id=tenant,
        from_chonk="build",
        to_chonk="human",
        reason="people_problem",
        requested_action="Check in with Ben about his review load",
        receipt_id="rcp_1",
        correlation_id="cor_1",
        created_by_run_id="run_1",
    )


def _fact(id_: str) -> MemoryFact:
    source = SourceRef(n=1, kind="message", ref="m-1", label="said", as_of=NOW)
    return MemoryFact(
        id=id_,
        tenant_id="acme",
        subject_id="acme/p",
        kind="preference",
        content="prefers mornings",
        source=source,
        shared_by="self",
        written_by_run_id="run_1",
        written_by_chonk_id="build",
    )
