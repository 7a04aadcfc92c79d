"""EC-MGR-008 and RC-MGR-03's "Learn" through the running services: an admin renames a
Chonk and sets the tenant's tone to 0.1, or lowers a context's ceiling; the runs after
speak in that voice, in a plain register, proposing the same actions on the same receipt.
Before, a run's tone was a number in the simulation's data and no tenant could name a
Chonk or lower a ceiling.

The weekly owner update is the run compared, as its cadence runs it week after week (a
run's id is its week's, so each week's message is its own). sim-lanternfish runs no Chief
Fin Officer: it is renamed "Margaret" as the spec says, and Chonksworth, who writes the
owner update, "Walter" beside it."""

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from libs.audit.reading import records
from services.chonk.harness import TONE
from tests.chonk.conftest import ORG, deliver_cadence, owner_update, person, report_of
from tests.support import bearer, token

ROOT, ANA = person("priya", roles=("admin",)), person("ana")
TENANTS_OWN = {"tone": {"default": 0.7}}  # sim-lanternfish's dial, as shipped
# Mondays, 07:00 in Los Angeles (summer time), whose owner update no other test runs.
BASELINE, RENAMED, LOWERED = (datetime(2028, 6, d, 14, tzinfo=UTC) for d in (5, 12, 19))


@contextlib.asynccontextmanager
async def speaking(api, voice: dict) -> AsyncIterator[dict]:
    """The tenant in `voice` for the block, as its admin sets it (the answer), then put
    back as shipped: the runs of the tests after it speak in the tenant's own."""
    r = await api.put("/v1/chonk/voice", json=voice, headers=ROOT)
    assert r.status == 200, await r.text()
    try:
        yield await r.json()
    finally:
        r = await api.put("/v1/chonk/voice", json=TENANTS_OWN, headers=ROOT)
        assert r.status == 200, await r.text()


async def owner_update_of(api, operator, acks, due: datetime) -> dict:
    """The owner update its cadence runs for `due`, as its report says it."""
    await deliver_cadence(api, operator, acks, due)
    report = await report_of(api, owner_update(due))
    assert report is not None
    return report


def acted(report: dict) -> list[tuple]:
    """A run's ProposedActions but for the words of its message: what was proposed, to
    whom, in which class."""
    return [(a["kind"], a["to"], a["class"]) for a in report["actions"]]


async def test_a_renamed_chonk_at_tone_0_1_says_the_same_plainly(api, operator, acks):
    shipped = await (await api.get("/v1/chonk/voice", headers=ROOT)).json()
    assert shipped["tone"]["default"] == 0.7
    assert (shipped["in_force"]["human_only_packet"], shipped["in_force"]["owner_update"]) == (
        0.0, 1.0
    )  # fmt: skip
    assert shipped["chonks"]["fin"] == {
        "name": "Chief Fin Officer", "species": "dolphin", "signature_phrases": []
    }  # fmt: skip
    baseline = await owner_update_of(api, operator, acks, BASELINE)
    assert (baseline["name"], baseline["context"], baseline["tone"]) == (
        "Chonksworth", "owner_update", 0.7
    )  # fmt: skip

    before = len(await records(operator.jetstream(), ORG))
    walter = {"name": "Walter", "species": "walrus", "signature_phrases": ["Walk with me."]}
    chonks = {"fin": {"name": "Margaret"}, "chonksworth": walter}
    said = {"tone": {"default": 0.1}, "chonks": chonks}
    async with speaking(api, said) as set_:
        (recorded,) = [
            x for x in (await records(operator.jetstream(), ORG))[before:]
            if x.action == "chonk.voice.set"
        ]  # fmt: skip
        renamed = await owner_update_of(api, operator, acks, RENAMED)
        roster = await (await api.get("/v1/chonk/roster", headers=ANA)).json()
    assert set_["tone"]["default"] == 0.1
    assert set_["chonks"]["chonksworth"] == walter
    assert set_["chonks"]["fin"] == {
        "name": "Margaret", "species": "dolphin", "signature_phrases": []
    }  # fmt: skip
    assert set_["chonks"]["build"]["name"] == "Chief Build Officer"
    # And each as its charter calls and draws it, whatever the org set.
    assert set_["charters"] == shipped["charters"] == shipped["chonks"]
    assert recorded.actor.sub == f"{ORG}/priya" and recorded.data["chonks"] == said["chonks"]
    # Its people write to it by the name it is called, its title as it was.
    (walter,) = [c for c in roster["chonks"] if c["id"] == "chonksworth"]
    assert (walter["name"], walter["title"]) == ("Walter", "Chief Executive Otter")
    assert (renamed["name"], renamed["tone"]) == ("Walter", 0.1)
    # The scripted writer's draft is at 0.7, above 0.1 twice: the deterministic template.
    assert renamed["body"].startswith("Here is what I found:\n- ")
    assert not baseline["body"].startswith("Here is what I found:")
    assert acted(renamed) == acted(baseline)
    sources = [{**s, "fetchedAt": None} for s in renamed["receipt"]["sources"]]
    assert sources == [{**s, "fetchedAt": None} for s in baseline["receipt"]["sources"]]
    # Every prompt the model was shown named it otherwise, or held another tone.
    assert set(renamed["prompts"]).isdisjoint(baseline["prompts"])


async def test_an_owner_lowers_a_ceiling_and_the_runs_stay_under_it(api, operator, acks):
    """RC-MGR-03's "Learn": the owner update's ceiling lowered to 0.3 holds a tenant whose
    dial is at 0.7, and the draft above it is counted as a misfire and sent plainly."""
    misfires = TONE.labels("chonksworth")._value.get()
    lowered = {"tone": {"default": 0.7, "ceilings": {"owner_update": 0.3}}}
    async with speaking(api, lowered) as set_:
        report = await owner_update_of(api, operator, acks, LOWERED)
    assert (set_["in_force"]["owner_update"], set_["in_force"]["incident"]) == (0.3, 0.3)
    assert (report["context"], report["tone"]) == ("owner_update", 0.3)
    assert report["body"].startswith("Here is what I found:")
    assert TONE.labels("chonksworth")._value.get() == misfires + 1


async def test_a_simulation_run_asked_again_in_another_voice_is_refused_by_name(api):
    """A simulation's run has one id, and its message is told once under it: in another
    voice it is in other words. Before, the admin was told 422 `idempotency-key-reused`
    of a key they never sent."""
    body = {"tenant": ORG, "run": "checkin_ana"}
    assert (await api.post("/v1/chonk/runs", json=body, headers=ROOT)).status == 201
    async with speaking(api, {"tone": {"default": 0.1}}):
        again = await api.post("/v1/chonk/runs", json=body, headers=ROOT)
        assert again.status == 409
        assert (await again.json())["type"].endswith(":run-told-otherwise")
    assert (await api.post("/v1/chonk/runs", json=body, headers=ROOT)).status == 201


async def test_a_voice_that_would_raise_a_ceiling_or_name_no_chonk_is_refused_whole(api):
    before = await (await api.get("/v1/chonk/voice", headers=ROOT)).json()
    wrong = {
        "tone": {"default": 0.4, "min": 0.9, "max": 0.2, "ceilings": {"safety": 0.5}},
        "chonks": {"fin": {"name": "Margaret"}, "cfo": {"name": "Bob"}},
    }
    r = await api.put("/v1/chonk/voice", json=wrong, headers=ROOT)
    assert r.status == 422
    detail = (await r.json())["detail"]
    for named in ("tone.min 0.9 is above tone.max 0.2", "tone.ceilings.safety: 0.5",
                  "may only be lowered", "chonks.cfo"):  # fmt: skip
        assert named in detail, detail
    # Out of range, an unknown context or field: refused by name before anything is read.
    for body, named in (
        ({"tone": {"default": 1.5}}, "default"),
        ({"tone": {"ceilings": {"gossip": 0.1}}}, "gossip"),
        ({"tone": {}, "chonks": {"fin": {"name": ""}}}, "chonks"),
        ({"tone": {}, "chonks": {"fin": {"species": "a\nb"}}}, "species"),
        ({"tone": {}, "voice": "loud"}, "voice"),
    ):
        r = await api.put("/v1/chonk/voice", json=body, headers=ROOT)
        assert r.status == 422, body
        assert named in (await r.json())["detail"], body
    assert await (await api.get("/v1/chonk/voice", headers=ROOT)).json() == before


async def test_only_an_admin_of_the_tenant_reads_or_sets_its_voice(api):
    said = {"tone": {"default": 0.1}}
    agent = person("priya", roles=("admin",), act=f"agent:{ORG}/priya")  # her own agent
    for headers in (ANA, agent):
        assert (await api.get("/v1/chonk/voice", headers=headers)).status == 403
        assert (await api.put("/v1/chonk/voice", json=said, headers=headers)).status == 403
    # An org with no simulation tenant runs no Chonk: it has no voice to read or set.
    elsewhere = bearer(token(org="acme", user="acme/ada", roles=["admin"]))
    assert (await api.get("/v1/chonk/voice", headers=elsewhere)).status == 404
    assert (await api.put("/v1/chonk/voice", json=said, headers=elsewhere)).status == 404
