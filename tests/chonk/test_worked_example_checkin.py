"""manager-agents.md §10, the Chief Human Officer's check-in with Ana on sim-lanternfish,
run end to end through the harness: the scripted model supplies each sub-agent's output,
the harness does the rest, and the run ends with the same numbered receipt, the same
message and ProposedAction, and the same memory writes."""

from datetime import datetime
from pathlib import Path

import msgspec
import pytest

from libs.model import Prompt, Scripted
from services.chonk.domain import memory, receipts
from services.chonk.domain.charters import load
from services.chonk.domain.prompt import TenantDirection
from services.chonk.domain.run import configure
from services.chonk.domain.types import SourceRef
from services.chonk.harness import ModelOutputInvalid, Run, run
from services.chonk.simulations import run_of, script, tenant

CHARTERS, _ = load((Path(__file__).parents[2] / "services/chonk/charters.json").read_bytes())
LANTERNFISH = tenant("sim-lanternfish")
CHECKIN = LANTERNFISH["runs"]["checkin_ana"]
NOW = datetime.fromisoformat(CHECKIN["run"]["now"])


class Recording(Scripted):
    def __init__(self, answers: dict) -> None:
        super().__init__(script(answers))
        self.shown: list[Prompt] = []

    async def reply(self, prompt: Prompt) -> str:
        self.shown.append(prompt)
        return await super().reply(prompt)


def the_run(tone: float = 0.7) -> Run:
    return run_of(CHECKIN["run"], tone)  # §10: "tone 0.7, context checkin"


async def run_checkin(answers: dict, tone: float = 0.7):
    model = Recording(answers)
    outcome = await run(
        the_run(tone),
        charter=CHARTERS["human"],
        config=configure(CHARTERS["human"]),
        model=model,
        direction=TenantDirection(goals=("v2 API GA by October 31",)),
        bundle={"person": "sim-lanternfish/ana", "org": "org_prodeng"},
        now=NOW,
    )
    return outcome, model


async def test_the_check_in_runs_end_to_end_with_the_same_receipt_message_and_writes():
    outcome, model = await run_checkin(CHECKIN["script"])
    assert [s.kind for s in outcome.plan.steps] == ["analyst", "analyst", "writer"]
    labels = [f"[{s.n}] {s.label}" for s in outcome.receipt.sources]
    assert labels == [
        "[1] GitHub lanternfish/core#412 — merged 2026-09-03 16:10 PT; review requested "
        "2026-09-02 09:00 PT",
        "[2] GitHub lanternfish/core#418, #419 — opened 2026-09-07; review requested; 0 reviews",
        "[3] Org Model cad_prodeng_rotd@v1293 — created 2026-09-07 by run_01J6ROTA, reason "
        '"review latency p50 21h"',
        "[4] Org Model gol_ana_growth@v1293 — health yellow; healthReason cites github:pr-412",
        "[5] Google Calendar (mirror as of 2026-09-08 12:00Z) — 2026-09-09: 6h00 in meetings vs "
        "90-day Wednesday median 1h30",
    ]
    assert outcome.findings[1].items[0].sources == (5,)  # renumbered into the receipt
    text = receipts.chat(outcome.draft, outcome.receipt)
    assert text.startswith("Hey Ana — quick one")
    assert text.endswith("Confidence 0.9 · gaps: none")
    [message] = outcome.actions
    assert (message.kind, message.to, message.receipt_id) == (
        "SEND_MESSAGE:ic_thread",
        "Ana",
        outcome.receipt.id,
    )
    # the model saw four prompts; the first four sections of each are the same
    assert len(model.shown) == 4 == len(outcome.prompts)
    stable = {p.system.split("## OPERATING_STATE")[0] for p in model.shown}
    assert len(stable) == 1
    written = [
        memory.committed(
            memory.MemoryFact(
                id=f"mem_{i}",
                tenant_id="sim-lanternfish",
                subject_id="sim-lanternfish/ana",
                kind=w["kind"],
                content=w["content"],
                source=SourceRef(
                    n=0, kind="message", ref=outcome.receipt.id, label="this run", as_of=NOW
                ),
                shared_by="chonk",
                written_by_run_id=outcome.receipt.run_id,
                written_by_chonk_id="human",
            ),
            writer=w["writer"],
            manages=True,
            consent=False,
            now=NOW,
        )
        for i, w in enumerate(CHECKIN["memory"])
    ]
    assert [(f.kind, f.visibility, (f.expires_at - NOW).days) for f in written] == [
        ("blocker_history", "self", 90),
        ("signal", "self", 90),
    ]


async def test_a_draft_ungrounded_twice_fails_the_step_and_once_is_regenerated():
    bad = msgspec.json.decode(msgspec.json.encode(CHECKIN["script"]))
    good = bad["writer:msg"][0]
    wrong = dict(good, body="Hey Ana. #412 merged [7]. Ben is the weakest reviewer [1].")
    bad["writer:msg"] = [wrong, good]
    outcome, model = await run_checkin(bad)
    assert outcome.draft.body == good["body"]
    rejected = model.shown[-1].system
    assert "[7] is not in the receipt" in rejected and "ranking people" in rejected
    bad["writer:msg"] = [wrong, wrong]
    with pytest.raises(ModelOutputInvalid, match="grounding check twice"):
        await run_checkin(bad)


async def test_a_plan_off_the_charter_never_reaches_an_analyst():
    bad = msgspec.json.decode(msgspec.json.encode(CHECKIN["script"]))
    bad["planner:plan"]["expectedActions"] = ["CONNECTOR_WRITE:finance.approve"]
    model = Recording(bad)
    with pytest.raises(Exception, match=r"finance\.approve is not allowed"):
        await run(
            the_run(),
            charter=CHARTERS["human"],
            config=configure(CHARTERS["human"]),
            model=model,
            direction=TenantDirection(),
            bundle={},
            now=NOW,
        )
    assert len(model.shown) == 1


async def test_rc_mgr_03_a_tone_above_the_ceiling_is_regenerated_then_sent_as_the_template():
    from services.chonk.harness import TONE

    loud = msgspec.json.decode(msgspec.json.encode(CHECKIN["script"]))
    good = loud["writer:msg"][0]
    loud["writer:msg"] = [dict(good, toneUsed=0.95), dict(good, toneUsed=0.9)]
    before = TONE.labels("human")._value.get()
    outcome, model = await run_checkin(loud)
    assert TONE.labels("human")._value.get() == before + 1
    assert "toneUsed 0.95 is above 0.7" in model.shown[-1].system
    body = outcome.draft.body
    assert body.startswith("Here is what I found:\n- #412 merged Thursday") and "[5]" in body
    assert outcome.draft.tone_used == 0.0
    loud["writer:msg"] = [dict(good, toneUsed=0.95), good]  # at the ceiling the second time
    outcome, _ = await run_checkin(loud)
    assert outcome.draft.body == good["body"]


async def test_rc_mgr_03_a_body_that_shows_more_than_its_tone_used_is_read_as_it_shows():
    """The writer says 0.2 and exclaims: read by what the body shows, it is above a
    wellbeing check-in's 0.2, and written again. Before, its own word was taken."""
    from services.chonk.harness import TONE

    script = msgspec.json.decode(msgspec.json.encode(CHECKIN["script"]))
    good = dict(script["writer:msg"][0], toneUsed=0.2)
    shouting = dict(good, body=good["body"].replace("Keep it there.", "Keep it there!"))
    script["writer:msg"] = [shouting, good]
    before = TONE.labels("human")._value.get()
    outcome, model = await run_checkin(script, tone=0.2)
    assert TONE.labels("human")._value.get() == before + 1
    assert "the body shows an exclamation, a tone of 0.3 at least, above 0.2" in (
        model.shown[-1].system
    )
    assert outcome.draft.body == good["body"]
    script["writer:msg"] = [shouting, shouting]  # and again: the template
    outcome, _ = await run_checkin(script, tone=0.2)
    assert outcome.draft.body.startswith("Here is what I found:")
