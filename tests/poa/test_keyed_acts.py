"""Issue 15: an act whose answer was lost in a failover, sent again with its
Idempotency-Key, is answered as it was and charged once; a grant, issued once."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.audit.reading import records as audit_records
from libs.contracts import codec
from libs.contracts.poa import CONTRACT, Decision
from services.poa.domain import ledger
from tests.poa.conftest import NOW, purchase, root_grant
from tests.support import answered_again_after_a_failover, bearer, forget_idempotency_key, token

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


async def test_a_keyed_act_run_again_is_charged_once(api, org, stack, operator):
    """Found among the ledger's latest keys: the change changes nothing, so it writes and
    records nothing."""
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
    recorded = [r.action for r in await audit_records(operator.jetstream(), org)]
    assert recorded.count("poa.act.record") == 2  # the keyed act once, and the other


@pytest.mark.parametrize("kept_apart", [True, False], ids=["kept-apart", "in-the-ledger"])
async def test_a_key_its_gateway_forgot_used_for_another_act_is_refused(
    api, org, stack, monkeypatch, kept_apart
):
    """The same key with another envelope is another request: refused, and never answered
    with the first act's outcome nor charged, whether its decision is found in the ledger's
    latest keys or, pushed out of them (here the ledger keeps one), in poa-acts."""
    agent, acts = await a_grant(api, org)
    key = f"buy-groceries-{kept_apart}"
    keyed = agent | {"Idempotency-Key": key}

    first = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert first.status == 200, await first.text()
    spent = 40
    if kept_apart:
        monkeypatch.setattr(ledger, "KEYS_KEPT", 1)
        pushing = agent | {"Idempotency-Key": f"pushing-{key}"}
        done = await api.post(acts, json={"envelope": purchase(40)}, headers=pushing)
        assert done.status == 200, await done.text()
        spent += 40
    await forget_idempotency_key(stack.redis_url, key)
    other = await api.post(acts, json={"envelope": purchase(30)}, headers=keyed)
    assert (other.status, (await other.json())["type"]) == (
        422,
        "urn:tether:problem:idempotency-key-reused",
    )

    unkeyed = await api.post(acts, json={"envelope": purchase(1)}, headers=agent)
    assert (await unkeyed.json())["spent_month_usd"] == str(spent + 1)


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
    """The ledger keeps only its latest keys (here one), so the second act's key pushes the
    first's out of it, into poa-acts for a day, before the second is charged."""
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


async def test_a_keyed_act_sent_again_after_the_month_turned_is_charged_once(api, org, stack, now):
    """Charged in a month's last second, sent again after midnight: the new month's ledger
    never saw its key, last month's did (and never let it go into poa-acts)."""
    now[0] = LAST_SECOND
    agent, acts = await a_grant(api, org)
    key = f"{org}-month-end"
    keyed = agent | {"Idempotency-Key": key}

    first = await api.post(acts, json={"envelope": purchase(40)}, headers=keyed)
    assert first.status == 200, await first.text()
    assert (await first.json())["spent_month_usd"] == "40"

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


async def test_a_keyed_grant_whose_replica_kept_no_answer_is_issued_once(api, org, stack, operator):
    """Answered with the grant the first made, not refused as one that exists."""
    user = f"{org}/ada"
    me = bearer(token(org=org, user=user)) | {"Idempotency-Key": "grant-once"}
    body = {"grant": root_grant(user)}
    grant = await answered_again_after_a_failover(
        api, "/v1/poa/grants", body, me, service="poa", redis_url=stack.redis_url, operator=operator
    )
    listed = await api.get("/v1/poa/grants", headers=me)
    assert [g["id"] for g in (await listed.json())["grants"]] == [grant["id"]]
    unkeyed = await api.post("/v1/poa/grants", json=body, headers=bearer(token(org=org, user=user)))
    assert unkeyed.status == 409, await unkeyed.text()
