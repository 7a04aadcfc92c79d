"""A run's claim is kept for a while once the run has reported, then removed by the
server; the report stays. Kept here for two seconds, not a week: before this, a claim
stayed for good beside every report."""

from datetime import UTC, datetime

import pytest

from libs.runtime.leader import newest_seq
from tests.chonk.conftest import ORG, deliver_cadence, owner_update, report_of
from tests.personal.conftest import eventually


@pytest.fixture
def settled_kept() -> int:
    """TETHER_SETTLED_KEPT, as the services read it."""
    return 2


async def test_a_reported_runs_claim_is_removed_after_its_keep_and_its_report_stays(
    api, operator, acks
):
    # A Monday, 07:00 in Los Angeles (summer time), whose owner update no other test runs.
    due = datetime(2027, 3, 22, 14, tzinfo=UTC)
    run_id, js = owner_update(due), operator.jetstream()
    await deliver_cadence(api, operator, acks, due)
    assert (await report_of(api, run_id))["trigger"] == "cadence"
    subject = f"$KV.chonk-runs.claimed.{ORG}.{run_id}"
    assert (await js.get_last_msg("KV_chonk-runs", subject)).headers.get("Nats-TTL") == "2s"

    async def gone() -> bool:
        return await newest_seq(js, "KV_chonk-runs", subject) == 0

    await eventually(gone, timeout=30)
    assert (await report_of(api, run_id))["id"] == run_id
