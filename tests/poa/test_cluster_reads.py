"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers with what was there before. A person's grants are read with
every acknowledged change in them: a grant just issued is listed, and revoked, through
whichever replica the next request reaches (a revoke looks the grant up among them). An
ask just put to its person is there to read, list and answer from another node."""

from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from functools import partial

import msgspec

from libs.contracts.poa import AskRecord, GrantRecord
from services.poa.store import open_stores
from tests.support import asked_again

GRANTS = 1000
ASKS = 3000  # a replica behind missed none of the first 2,000 reads in some runs


async def test_a_grant_read_as_soon_as_it_is_issued_or_revoked_is_that_grant(two_nodes):
    writer, other = two_nodes
    grants, _, _ = await open_stores(writer.jetstream(), replicas=3)
    elsewhere, _, _ = await open_stores(other.jetstream(), replicas=3)
    missed = []
    for i in range(GRANTS):
        record = _issued(f"acme/p{i % 20}", f"g-{i}")
        await asked_again(grants.create, record)
        listed = await asked_again(elsewhere.of_owner, "acme", record.owner)
        if record not in listed:
            missed.append(("listed", i))
        revoked = await asked_again(elsewhere.change, record, _revoked)
        if not revoked.revoked:
            missed.append(("revoked", i))
        found = await asked_again(grants.get, "acme", record.owner, record.id)
        if found is None or not found.revoked:
            missed.append(("read", i))
    assert missed == []


async def test_an_ask_read_as_soon_as_it_is_put_is_that_ask(two_nodes):
    writer, other = two_nodes
    _, _, asks = await open_stores(writer.jetstream(), replicas=3)
    _, _, elsewhere = await open_stores(other.jetstream(), replicas=3)
    missed = []
    for i in range(ASKS):
        ask = _asked(f"ask_{i:024x}", person=f"acme/p{i % 20}")
        await asked_again(partial(asks.create, record=_unrecorded), ask)
        if await asked_again(elsewhere.get, "acme", ask.person, ask.id) != ask:
            missed.append(("get", i))
        if i % 10 == 0 and ask not in await asked_again(elsewhere.of_person, "acme", ask.person):
            missed.append(("listed", i))
    assert missed == []


def _unrecorded(*_: object) -> nullcontext[None]:
    return nullcontext()


def _asked(ask_id: str, *, person: str) -> AskRecord:
    at = datetime(2026, 12, 3, tzinfo=UTC)
    return AskRecord(
        id=ask_id, org="acme", person=person, agent="urn:example:agent:a", grant_id="poa_1",
        act_id=None, rule_id="over_per_act_limit", act="shop.buy", envelope={}, official=True,
        asked_at=at, expires_at=at + timedelta(minutes=1),
    )  # fmt: skip


def _issued(owner: str, grant_id: str) -> GrantRecord:
    return GrantRecord(
        id=grant_id,
        org="acme",
        owner=owner,
        delegate=None,
        parent_id=None,
        revoked=False,
        issued_at=datetime(2026, 12, 3, tzinfo=UTC),
    )


def _revoked(record: GrantRecord) -> GrantRecord:
    return msgspec.structs.replace(record, revoked=True)
