"""§6.2's retention and redaction, as the memory bucket holds them: a fact past its expiry
is read by no run and shown on no knows page, and the server removes it; a fact its
subject redacted keeps none of its words, in any revision of the bucket."""

import uuid
from datetime import UTC, datetime, timedelta

from nats.js.errors import KeyNotFoundError

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.runtime.kv import write_at
from services.chonk.domain.memory import MemoryFact
from services.chonk.domain.types import SourceRef
from services.chonk.store import open_store
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually
from tests.support import bearer, history, token

ROOT, ANA = person("priya", roles=("admin",)), person("ana")


def key(subject: str, fact_id: str) -> str:
    return f"facts.{ORG}.{key_token(subject)}.{fact_id}"


def commitment(fact_id: str, subject: str, expires_at: datetime) -> MemoryFact:
    now = datetime.now(UTC)
    return MemoryFact(
        id=fact_id,
        tenant_id=ORG,
        subject_id=subject,
        kind="commitment",
        content="Said she'd have the migration PR up by Thursday",
        source=SourceRef(n=0, kind="message", ref="msg_1", label="a message", as_of=now),
        shared_by="chonk",
        expires_at=expires_at,
        written_by_run_id="run_t",
        written_by_chonk_id="build",
    )


async def knows(api, headers) -> dict:
    found = await api.get("/v1/chonk/knows", headers=headers)
    assert found.status == 200, await found.text()
    return await found.json()


async def checkin(api) -> dict:
    started = await api.post(
        "/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=ROOT
    )
    assert started.status == 201, await started.text()
    return await started.json()


async def test_a_consideration_past_its_ninety_days_is_not_on_file(api):
    # §10: "a consideration fact expired last week"; the simulation's was written 97 days ago.
    report = await checkin(api)
    page = await knows(api, ANA)
    assert "mem_ana_consideration_sept" not in {f["id"] for f in page["facts"]}
    read = next(x for x in page["reads"] if x["run"] == report["id"])
    assert read["facts"] and "mem_ana_consideration_sept" not in read["facts"]
    redact = await api.post("/v1/chonk/memory/mem_ana_consideration_sept", json={}, headers=ANA)
    assert redact.status == 404


async def test_a_fact_past_its_expiry_but_still_stored_is_read_by_no_one(api, operator):
    # As a fact written before expiries were kept by the server lies in the bucket.
    lapsed = commitment(f"mem_lapsed_{uuid.uuid4().hex[:8]}", f"{ORG}/ana", datetime.now(UTC))
    kv = await operator.jetstream().key_value("chonk-memory")
    await write_at(kv, key(lapsed.subject_id, lapsed.id), codec.encode(lapsed), 0)

    report = await checkin(api)
    page = await knows(api, ANA)
    assert lapsed.id not in {f["id"] for f in page["facts"]}
    read = next(x for x in page["reads"] if x["run"] == report["id"])
    assert read["facts"] and lapsed.id not in read["facts"]
    redact = await api.post(f"/v1/chonk/memory/{lapsed.id}", json={}, headers=ANA)
    assert redact.status == 404


async def test_the_server_removes_a_fact_at_its_expiry(api, operator):
    subject = f"{ORG}/p-{uuid.uuid4().hex[:8]}"
    headers = bearer(token(org=ORG, user=subject))
    now = datetime.now(UTC)
    fact = commitment("mem_soon", subject, now + timedelta(seconds=4))
    store = await open_store(operator.jetstream())
    await store.change_fact(ORG, subject, fact.id, lambda _: fact, now=now)
    assert [f["id"] for f in (await knows(api, headers))["facts"]] == ["mem_soon"]

    kv = await operator.jetstream().key_value("chonk-memory")

    async def removed() -> bool:
        try:
            await kv.get(key(subject, fact.id))
        except KeyNotFoundError:
            return True
        return False

    await eventually(removed, timeout=30)
    assert (await knows(api, headers))["facts"] == []


async def test_a_redacted_fact_keeps_none_of_its_words_in_the_bucket(api, operator):
    subject = f"{ORG}/p-{uuid.uuid4().hex[:8]}"
    headers = bearer(token(org=ORG, user=subject))
    now = datetime.now(UTC)
    fact = commitment("mem_redacted", subject, now + timedelta(days=90))
    kv = await operator.jetstream().key_value("chonk-memory")
    await write_at(kv, key(subject, fact.id), codec.encode(fact), 0)

    gone = await api.post("/v1/chonk/memory/mem_redacted", json={}, headers=headers)
    assert gone.status == 200, await gone.text()
    assert (await gone.json())["redacted"] is True
    revisions = await history(kv, key(subject, fact.id))
    assert len(revisions) == 1
    assert b"migration PR" not in revisions[0].value
    assert codec.decoder(MemoryFact).decode(revisions[0].value).redacted_at is not None
