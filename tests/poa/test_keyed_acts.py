"""Issue 15: an act whose answer was lost in a failover, sent again with its
Idempotency-Key, is answered as it was and charged once."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.contracts import codec
from libs.contracts.poa import CONTRACT, Decision
from services.poa.domain import ledger
from tests.poa.conftest import NOW, purchase, root_grant
from tests.support import bearer, forget_idempotency_key, token

AGENT = "urn:example:agent:a_456"
LAST_SECOND = datetime(2026, 9, 30, 23, 59, 59, tzinfo=UTC)  # inside the grant's validity


@pytest.fixture
def now() -> list[datetime]:
    """The service's clock, which a test may move."""
    return [NOW]


@pytest.fixture
def poa_clock(now):
    return lambda: now[0]


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(CONTRACT,))


async def a_grant(api, org: str) -> tuple[dict[str, str], str]:
    """Ada's root grant, issued: her agent's headers and the grant's acts."""
    user = f"{org}/ada"
    me, agent = bearer(token(org=org, user=user)), bearer(token(org=org, user=user, act=AGENT))
    issued = await api.post("/v1/poa/grants", json={"grant": root_grant(user)}, headers=me)
    assert issued.status == 201, await issued.text()
    return agent, f"/v1/poa/grants/{(await issued.json())['id']}/acts"


async def test_a_keyed_act_run_again_is_charged_once(api, org, stack):
    agent, acts = await a_grant(api, org)
    keyed = agent | {"Idempotency-Key": "buy-groceries-1"}

    first = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert first.status == 200, await first.text()
    await forget_idempotency_key(stack.redis_url, "buy-groceries-1")
    again = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert again.status == 200, await again.text()
    assert await again.json() == await first.json()
    assert (await first.json())["spent_month_usd"] == "40"

    other = await api.post(acts, json={"envelope": purchase(10)}, headers=agent)
    outcome = await other.json()
    assert (outcome["decision"]["decision"], outcome["spent_month_usd"]) == ("ALLOW", "50")
    assert outcome["binding_acts_today"] == 2


@pytest.mark.parametrize("kept_apart", [True, False], ids=["kept-apart", "in-the-ledger"])
async def test_a_key_its_gateway_forgot_used_for_another_act_is_refused(
    api, org, stack, operator, kept_apart
):
    """The same key with another envelope is another request: refused, and never answered
    with the first act's outcome nor charged, whether its decision is found in poa-acts or,
    that keep lost, in the ledger's latest keys."""
    agent, acts = await a_grant(api, org)
    key = f"buy-groceries-{kept_apart}"
    keyed = agent | {"Idempotency-Key": key}

    first = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert first.status == 200, await first.text()
    if not kept_apart:
        await operator.jetstream().purge_stream("KV_poa-acts", subject=f"$KV.poa-acts.{org}.>")
    await forget_idempotency_key(stack.redis_url, key)
    other = await api.post(acts, json={"envelope": purchase(30)}, headers=keyed)
    assert (other.status, (await other.json())["type"]) == (
        422,
        "urn:tether:problem:idempotency-key-reused",
    )

    unkeyed = await api.post(acts, json={"envelope": purchase(1)}, headers=agent)
    assert (await unkeyed.json())["spent_month_usd"] == "41"


async def test_a_keyed_grant_issued_again_is_answered_as_it_was(api, org, stack):
    """Not refused as a grant that exists: the runtime kept the first answer."""
    me = bearer(token(org=org, user=f"{org}/ada")) | {"Idempotency-Key": "grant-1"}
    body = {"grant": root_grant(f"{org}/ada")}

    first = await api.post("/v1/poa/grants", json=body, headers=me)
    assert first.status == 201, await first.text()
    await forget_idempotency_key(stack.redis_url, "grant-1")
    again = await api.post("/v1/poa/grants", json=body, headers=me)
    assert again.status == 201, await again.text()
    assert await again.json() == await first.json()


async def test_a_keyed_act_run_again_after_many_others_is_charged_once(
    api, org, stack, monkeypatch
):
    """Its decision is kept a day apart from the ledger, which keeps only its latest keys:
    here one, so the second act's key pushes the first's out of it."""
    monkeypatch.setattr(ledger, "KEYS_KEPT", 1)
    agent, acts = await a_grant(api, org)

    for key in ("first", "second"):
        keyed = agent | {"Idempotency-Key": key}
        done = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
        assert done.status == 200, await done.text()
    await forget_idempotency_key(stack.redis_url, "first")
    again = await api.post(
        acts, json={"envelope": purchase(40)}, headers=agent | {"Idempotency-Key": "first"}
    )
    outcome = await again.json()
    assert (outcome["decision"]["decision"], outcome["spent_month_usd"]) == ("ALLOW", "80")
    assert outcome["binding_acts_today"] == 2


async def test_a_keyed_act_never_kept_apart_is_charged_once_after_many_others(
    api, org, stack, operator, monkeypatch
):
    """Its decision was charged, but keeping it in poa-acts failed (the bucket lost its
    leader; here its entries are purged): the ledger lets its key go only once kept."""
    monkeypatch.setattr(ledger, "KEYS_KEPT", 1)
    agent, acts = await a_grant(api, org)
    first = agent | {"Idempotency-Key": "never-kept"}

    done = await api.post(acts, json={"envelope": purchase(40)}, headers=first)
    assert done.status == 200, await done.text()
    await operator.jetstream().purge_stream("KV_poa-acts", subject=f"$KV.poa-acts.{org}.>")
    second = agent | {"Idempotency-Key": "after-it"}
    done = await api.post(acts, json={"envelope": purchase(40)}, headers=second)
    assert done.status == 200, await done.text()

    await forget_idempotency_key(stack.redis_url, "never-kept")
    again = await api.post(acts, json={"envelope": purchase(40)}, headers=first)
    outcome = await again.json()
    assert (outcome["decision"]["decision"], outcome["spent_month_usd"]) == ("ALLOW", "80")
    assert outcome["binding_acts_today"] == 2


async def test_a_keyed_act_sent_again_after_the_month_turned_is_charged_once(
    api, org, stack, operator, now
):
    """Charged in a month's last second, its keep in poa-acts lost, sent again after
    midnight: the new month's ledger never saw its key, last month's did."""
    now[0] = LAST_SECOND
    agent, acts = await a_grant(api, org)
    key = f"{org}-month-end"
    keyed = agent | {"Idempotency-Key": key}

    first = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert first.status == 200, await first.text()
    assert (await first.json())["spent_month_usd"] == "40"
    await operator.jetstream().purge_stream("KV_poa-acts", subject=f"$KV.poa-acts.{org}.>")

    now[0] = LAST_SECOND + timedelta(minutes=2)
    await forget_idempotency_key(stack.redis_url, key)
    again = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert again.status == 200, await again.text()
    outcome = await again.json()
    assert outcome["decision"] == (await first.json())["decision"]
    assert outcome["spent_month_usd"] == "0"  # October's books: nothing charged to them

    other = await api.post(acts, json={"envelope": purchase(10)}, headers=agent)
    assert (await other.json())["spent_month_usd"] == "10"


def test_a_decision_kept_before_its_requests_digest_was_still_answers_its_key():
    """A ledger written before the digest was kept with each decision still decodes, and
    its keys are answered, not charged again."""
    stored = b'{"month": "2026-12", "keyed": {"k1": {"decision": "ALLOW", "rule_id": "r"}}}'
    books = codec.decoder(ledger.RootLedger).decode(stored)

    assert ledger.replayed(books, "k1", b"any request") == Decision(decision="ALLOW", rule_id="r")


def test_last_month_is_read_only_within_a_day_of_its_end():
    day = timedelta(hours=25)
    assert ledger.month_before(LAST_SECOND + timedelta(minutes=2), day) == "2026-09"
    assert ledger.month_before(LAST_SECOND + timedelta(hours=24), day) == "2026-09"
    assert ledger.month_before(LAST_SECOND + timedelta(hours=26), day) is None
    assert ledger.month_before(LAST_SECOND, day) is None
