"""manager-agents.md as pure functions: the charters and matrix (§2, §4), one run's
configuration (§1), the executor's checks at each handoff (§3), grounding (§3.4, §5.4),
receipts per surface (§5.3), the prompt's sections (§5.1), the tone dial (§7.2) and
memory's rules (§6), with the edge cases of §12 that live in them."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.contracts.chonk import ChonkSkin
from services.chonk.domain import executor, grounding, memory, prompt, receipts, tone
from services.chonk.domain.charters import ROSTER, CharterError, load, skinned
from services.chonk.domain.run import configure
from services.chonk.domain.types import (
    Draft,
    Finding,
    FindingItem,
    ProposedAction,
    Receipt,
    SourceRef,
    Step,
    StepPlan,
)

SHIPPED = Path(__file__).parents[2] / "services" / "chonk" / "charters.json"
CHARTERS, NEVER = load(SHIPPED.read_bytes())
NOW = datetime(2026, 9, 8, 13, 5, tzinfo=UTC)


def source(n: int, label: str = "GitHub lanternfish/core#412 merged") -> SourceRef:
    return SourceRef(n=n, kind="mirror", ref=f"github:pr-{n}", label=label, as_of=NOW)


def receipt(*sources: SourceRef) -> Receipt:
    return Receipt(
        id="rcp_1", run_id="run_1", tenant_id="sim-lanternfish", created_at=NOW, sources=sources
    )


# §2, §4: the charters and the matrix


def test_the_nine_charters_load_with_their_column_of_the_matrix():
    assert tuple(CHARTERS) == ROSTER
    matrix = json.loads(SHIPPED.read_text())["matrix"]
    for chonk, charter in CHARTERS.items():
        column = {r["id"] for r in matrix if r["cells"][chonk]}
        assert charter.tool_allowlist | charter.action_allowlist == column
    assert "CONNECTOR_WRITE:hris.pto" in CHARTERS["human"].action_allowlist
    only = [c for c in ROSTER if "CONNECTOR_WRITE:finance.approve" in CHARTERS[c].action_allowlist]
    assert only == ["fin"]
    assert [c for c in ROSTER if "audit.query" in CHARTERS[c].tool_allowlist] == [
        "chonksworth",
        "security",
    ]
    assert {c for c in ROSTER if CHARTERS[c].sub_agents["chaser"]} == {
        "build",
        "ops",
        "revenue",
        "fin",
        "human",
    }


def test_the_shared_never_list_is_in_no_action_allowlist():
    kinds = {a.split(":")[0] for c in CHARTERS.values() for a in c.action_allowlist}
    assert {"COMPENSATION", "PROMOTION", "TERMINATION", "HIRING_DECISION"} <= NEVER
    assert not kinds & NEVER


def test_a_charter_whose_action_allowlist_holds_a_never_list_kind_is_refused():
    shipped = json.loads(SHIPPED.read_text())
    cells = {c: "" for c in ROSTER} | {"revenue": "P"}
    shipped["matrix"].append({"kind": "action", "id": "COMPENSATION", "cells": cells})
    with pytest.raises(CharterError, match=r"charter revenue: the never list's \['COMPENSATION'\]"):
        load(json.dumps(shipped).encode())


def test_a_voice_below_the_directness_floor_is_refused():
    shipped = json.loads(SHIPPED.read_text())
    shipped["charters"][1]["voice"]["directness"] = 0.5
    with pytest.raises(CharterError, match=r"charter fin: directness below 0\.6"):
        load(json.dumps(shipped).encode())


@given(
    st.sets(st.sampled_from(sorted(CHARTERS["ops"].tool_allowlist | {"kms.sign"}))),
    st.sets(st.sampled_from(sorted(CHARTERS["ops"].action_allowlist | {"COMPENSATION"}))),
)
def test_tenant_configuration_and_function_modes_can_only_remove(tools, actions):
    charter = CHARTERS["ops"]
    config = configure(
        charter,
        tenant_tools=frozenset(tools),
        tenant_actions=frozenset(actions),
        removed_by_modes=frozenset({"ORG_CHANGE:plan"}),
    )
    assert config.tools <= charter.tool_allowlist and config.actions <= charter.action_allowlist
    assert "ORG_CHANGE:plan" not in config.actions


# §3: the executor at each handoff


def plan(*steps: Step, actions=("SEND_MESSAGE:ic_thread",)) -> StepPlan:
    return StepPlan(objective="chase #412", steps=steps, expected_actions=actions)


def test_a_plan_is_refused_for_a_tool_or_action_off_its_allowlists_or_over_budget():
    config = configure(CHARTERS["build"])
    ok = plan(
        Step(id="a", kind="analyst", goal="who is it waiting on", tools=("mirror.work.read",)),
        Step(id="c", kind="chaser", goal="ask", inputs=("a",)),
    )
    assert executor.checked_plan(ok, config, budget_steps=4) == ok
    bad = plan(
        Step(id="a", kind="analyst", goal="g", tools=("mirror.finance.read",)),
        Step(id="w", kind="writer", goal="g", inputs=("zz",)),
        actions=("CONNECTOR_WRITE:finance.approve",),
    )
    with pytest.raises(executor.HandoffRefused) as caught:
        executor.checked_plan(bad, config, budget_steps=1)
    assert len(caught.value.reasons) == 4
    chaser = plan(Step(id="c", kind="chaser", goal="g"))
    with pytest.raises(executor.HandoffRefused, match="no chaser"):
        executor.checked_plan(chaser, configure(CHARTERS["porpoise"]), budget_steps=4)


def test_every_finding_item_cites_its_sources_and_they_are_numbered_into_the_receipt():
    first = Finding(
        step_id="a",
        kind="stall",
        items=(FindingItem(text="#412 waited", sources=(1,)),),
        sources=(source(1),),
        confidence=0.9,
        gaps=("HubSpot stale",),
    )
    second = Finding(
        step_id="b",
        kind="delta",
        items=(FindingItem(text="two PRs opened", sources=(1, 2)),),
        sources=(source(1, "#418"), source(2, "#419")),
    )
    r, _ = executor.merged(receipt(), first)
    r, renumbered = executor.merged(r, second)
    assert [s.n for s in r.sources] == [1, 2, 3] and renumbered.items[0].sources == (2, 3)
    assert r.confidence == 0.9 and r.gaps == ("HubSpot stale",)
    uncited = Finding(
        step_id="c",
        kind="x",
        items=(FindingItem(text="t", sources=()), FindingItem(text="u", sources=(9,))),
        sources=(source(1),),
    )
    with pytest.raises(executor.HandoffRefused) as caught:
        executor.merged(r, uncited)
    assert len(caught.value.reasons) == 2


def test_the_chaser_proposes_only_its_kinds_and_never_messages_a_person_it_does_not_manage():
    config = configure(CHARTERS["build"])
    managed = frozenset({"sim-lanternfish/ben"})
    ok = [
        ProposedAction(kind="SEND_MESSAGE:ic_thread", to="sim-lanternfish/ben"),
        ProposedAction(kind="SCHEDULE_FOLLOWUP", to="sim-lanternfish/ben"),
        ProposedAction(kind="CONNECTOR_WRITE:work.comment", to="github:pr-412"),
    ]
    assert executor.checked_chaser(ok, config, managed=managed) == (ok, [], [])
    bad = [
        ProposedAction(kind="SEND_MESSAGE:ic_thread", to="sim-lanternfish/tomas"),
        ProposedAction(kind="ORG_CHANGE:plan", to="prj_v2ga"),
    ]
    kept, outside, dropped = executor.checked_chaser([*ok[:1], *bad], config, managed=managed)
    assert kept == ok[:1] and outside == ["ORG_CHANGE:plan"]
    assert "that is a HANDOFF" in dropped[0]
    assert "does not propose ORG_CHANGE:plan" in dropped[1]


def test_a_recommendation_without_a_receipt_with_a_source_cannot_leave_the_executor():
    action = ProposedAction(kind="ESCALATE", to="owner", receipt_id="rcp_1")
    assert not executor.leaves(action, [receipt()])
    assert not executor.leaves(
        msgspec.structs.replace(action, receipt_id=None), [receipt(source(1))]
    )
    assert executor.leaves(action, [receipt(source(1))])


# §3.4, §5.4: grounding


def draft(body: str, surface: str = "chat") -> Draft:
    return Draft(step_id="w", surface=surface, body=body)  # type: ignore[arg-type]


def test_ec_mgr_002_a_marker_not_in_the_receipt_rejects_the_draft():
    six = receipt(*(source(n) for n in range(1, 7)))
    assert grounding.faults(draft("It merged Thursday [1]. See also [7]."), six) == [
        "[7] is not in the receipt"
    ]


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        ("The PR waited 20 hours.", "a number or date"),
        ("The migration is blocked.", "a status"),
        ("Ben has not looked at it.", "Ben named"),
    ],
)
def test_a_number_date_name_or_status_needs_a_citation(body, fault):
    found = grounding.faults(draft(body), receipt(source(1)), names=["Ben"])
    assert len(found) == 1 and found[0].startswith(fault)
    assert (
        grounding.faults(draft(body.rstrip(".") + " [1]."), receipt(source(1)), names=["Ben"]) == []
    )


def test_a_name_is_a_word_of_the_statement_not_a_piece_of_one():
    body = "The bench is set up for the Analytics offsite."
    assert grounding.faults(draft(body), receipt(source(1)), names=["Ben", "Ana"]) == []


def test_a_draft_over_its_surface_limit_is_rejected():
    assert grounding.faults(draft("ok " * 200, surface="sms"), receipt()) == [
        "600 characters; sms allows 480"
    ]


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ("Ben is out for surgery until the 14th [1].", "health"),  # EC-MGR-010
        ("Your weakest engineer is Ben [1].", "ranking people"),  # EC-MGR-004
        ("Ana is likely to quit [1].", "prediction about a person"),
        ("As a human, I get it [1].", "claiming to be human"),
        ("Don't tell your manager about this [1].", "keeping it from the manager of record"),
        ("He said so in a DM [1].", "private channels"),
    ],
)
def test_forbidden_content_rejects_the_draft(body, rule):
    assert [f for f in grounding.faults(draft(body), receipt(source(1))) if rule in f]


# §5.3: receipts per surface


def test_receipts_in_chat_carry_the_block_rules_and_confidence_and_sms_says_reply_why():
    r = msgspec.structs.replace(
        receipt(source(1), source(2, "GitHub lanternfish/core#418, #419 opened, 0 reviews")),
        confidence=0.9,
    )
    d = draft("#412 merged Thursday [1], and #418 and #419 are up [2].")
    text = receipts.chat(d, r)
    assert text.splitlines()[2] == "Receipts"
    assert "[2] GitHub lanternfish/core#418, #419 opened, 0 reviews" in text
    assert text.endswith("Confidence 0.9 · gaps: none")
    sms = receipts.sms(d)
    assert "[" not in sms and sms.endswith("Reply WHY for sources.")
    many = receipt(*(source(n, "a long label " * 8) for n in range(1, 16)))
    segments = receipts.why(many)
    assert len(segments) <= 3 and all(len(s) <= receipts.SEGMENT for s in segments)
    assert all(f"[{n}]" in "".join(segments) for n in range(1, 16))


# §5.1: the prompt


def test_the_prompt_has_eight_sections_and_the_first_four_are_the_same_across_runs():
    charter = CHARTERS["human"]
    config = configure(charter)
    direction = prompt.TenantDirection(goals=("v2 API GA by Oct 31",))

    def built(task: str, t: float) -> prompt.Prompt:
        return prompt.build(
            charter,
            tone=t,
            direction=direction,
            config=config,
            state={"phase": "pilot"},
            bundle={"people": [task]},
            task=task,
            contract="Draft JSON",
        )

    one, two = built("check in with Ana", 0.7), built("brief Ben", 0.2)
    assert [name for name, _ in one.sections] == list(prompt.SECTIONS)
    assert one.stable == two.stable and one.hash != two.hash
    assert all(c in one.text for c in prompt.COMMITMENTS)


# §7.2: the tone dial


@given(
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
    st.sampled_from(sorted(tone.CEILING)),
    st.floats(0, 1) | st.none(),
    st.floats(0, 1) | st.none(),
)
def test_the_tone_dial_never_exceeds_a_context_s_ceiling(
    default, low, high, context, surface, lowered
):
    """Whatever the dial, a surface's override or a ceiling the owner lowered: a surface
    overriding the dial stays under the ceiling too (§7.2 wrote it after the ceiling, so
    an SMS override lifted a packet's 0.0)."""
    policy = tone.TonePolicy(
        default=default, min=min(low, high), max=max(low, high),
        surface_overrides={} if surface is None else {"sms": surface},
        ceilings={} if lowered is None else {context: lowered},
    )  # fmt: skip
    value = tone.tone(policy, context, "sms")
    ceiling = tone.CEILING[context]
    if isinstance(ceiling, float):
        assert value <= ceiling
    if lowered is not None:
        assert value <= round(lowered, 3)
    assert 0 <= value <= 1


def test_a_ceiling_may_only_be_lowered_and_every_fault_is_named():
    assert tone.faults(tone.TonePolicy(ceilings={"wellbeing": 0.1, "reply": 0.4})) == []
    assert tone.faults(tone.TonePolicy(min=0.8, max=0.2, ceilings={"safety": 0.1})) == [
        "tone.min 0.8 is above tone.max 0.2",
        "tone.ceilings.safety: 0.1 is above its ceiling 0.0; a ceiling may only be lowered",
    ]
    lowered = tone.TonePolicy(default=0.9, ceilings={"reply": 0.4, "launch": 0.3})
    assert tone.tone(lowered, "reply", "chat") == 0.4
    assert tone.tone(lowered, "launch", "chat") == 0.3
    assert tone.tone(lowered, "brief", "chat") == 0.9


def test_a_body_is_read_for_the_least_tone_it_shows():
    human = skinned(CHARTERS["human"], ChonkSkin(signature_phrases=("Don't skip lunch",)))
    voice = human.voice
    assert tone.read("PR #412 merged Thursday [1].", voice) == (0.0, ())
    assert tone.read("It merged! [1]", voice) == (0.3, ("an exclamation",))
    assert tone.read("Shipped 🚀 [1]", voice) == (0.6, ("an emoji",))
    assert tone.read("Lunch at 12:30 [5]. don't skip lunch.", voice) == (
        0.3, ("a signature phrase",)
    )  # fmt: skip
    assert tone.read("Lunch! 🎉", voice) == (0.6, ("an emoji", "an exclamation"))


def test_ec_mgr_008_a_rename_and_a_low_tone_change_the_voice_only():
    fin = CHARTERS["fin"]
    skin = ChonkSkin(name="Margaret", species="otter", signature_phrases=("Receipts, please.",))
    margaret = skinned(fin, skin)
    v = margaret.voice
    assert (v.display_name, v.species, v.signature_phrases) == (
        "Margaret", "otter", ("Receipts, please.",)
    )  # fmt: skip
    assert msgspec.structs.replace(v, display_name=fin.voice.display_name, species="dolphin",
                                   signature_phrases=()) == fin.voice  # fmt: skip
    assert msgspec.structs.replace(margaret, voice=fin.voice) == fin
    assert skinned(fin, ChonkSkin(name="Margaret")).voice.species == fin.voice.species
    renamed = msgspec.structs.replace(
        margaret, voice=msgspec.structs.replace(margaret.voice, directness=0.1)
    )
    assert configure(renamed) == configure(fin)
    assert tone.directness(renamed.voice) == 0.6
    assert tone.tone(tone.TonePolicy(default=0.1), "reply", "chat") == 0.1
    built = prompt.build(
        renamed,
        tone=0.1,
        direction=prompt.TenantDirection(),
        config=configure(renamed),
        state={},
        bundle={},
        task="t",
        contract="c",
    )
    assert "You are Margaret, Chief Fin Officer, a otter." in built.text
    assert "Signature phrases, used sparingly and more as the tone rises: Receipts, please." in (
        built.text
    )


# §6: memory


def fact(kind: str, content: str, **fields) -> memory.MemoryFact:
    return memory.MemoryFact(
        id="mem_1",
        tenant_id="sim-lanternfish",
        subject_id="sim-lanternfish/ana",
        kind=kind,
        content=content,
        source=source(1),
        shared_by=fields.pop("shared_by", "chonk"),
        written_by_run_id="run_1",
        written_by_chonk_id="human",
        **fields,
    )


def test_memory_keeps_the_table_of_who_writes_what_visible_to_whom_for_how_long():
    stored = memory.committed(
        fact("blocker_history", "PR #412 stalled 20 h; chased Ben"),
        writer="build",
        manages=True,
        consent=False,
        now=NOW,
    )
    assert stored.visibility == "self" and (stored.expires_at - NOW).days == 90
    assert memory.held(stored, NOW + timedelta(days=89))
    assert not memory.held(stored, NOW + timedelta(days=90))
    kept_for_good = msgspec.structs.replace(stored, expires_at=None)
    assert memory.held(kept_for_good, NOW + timedelta(days=9_000))
    with pytest.raises(memory.MemoryRefused, match="may not write"):
        memory.committed(
            fact("working_agreement", "no meetings before 10"),
            writer="build",
            manages=True,
            consent=False,
            now=NOW,
        )
    with pytest.raises(memory.MemoryRefused, match="written by the executor"):
        memory.committed(
            fact("owner_report", "x"), writer="human", manages=True, consent=False, now=NOW
        )


def test_memory_never_stores_what_section_6_3_forbids():
    for content in ("Ben is a flight risk", "Ana is the weakest engineer on the team"):
        with pytest.raises(memory.MemoryRefused, match="never stored"):
            memory.committed(
                fact("signal", content), writer="analyst runs", manages=True, consent=False, now=NOW
            )


def test_a_consideration_needs_the_person_s_yes_and_keeps_their_words():
    words = "Reduced availability Sept 10-20 (her words: 'family stuff, back on the 21st')"
    with pytest.raises(memory.MemoryRefused, match="yes to being remembered"):
        memory.committed(
            fact("consideration", words, shared_by="self"),
            writer="human",
            manages=True,
            consent=False,
            now=NOW,
        )
    kept = memory.committed(
        fact("consideration", words, shared_by="self"),
        writer="human",
        manages=True,
        consent=True,
        now=NOW,
    )
    assert kept.content == words


def test_ec_mgr_005_anonymous_peer_feedback_is_not_stored():
    anonymous = fact(
        "feedback_received", "Praise: solid reviews", shared_by="chonk", evidence=(source(2),)
    )
    with pytest.raises(memory.MemoryRefused, match="attributed"):
        memory.committed(anonymous, writer="human", manages=True, consent=False, now=NOW)
    concern = fact(
        "feedback_given", "Concern: three PRs opened without tests", evidence=(source(2),)
    )
    with pytest.raises(memory.MemoryRefused, match="path"):
        memory.committed(concern, writer="human", manages=True, consent=False, now=NOW)


def test_anything_written_to_the_owner_about_a_person_is_their_owner_report():
    people = {
        "Ana": "sim-lanternfish/ana",
        "Lena": "sim-lanternfish/lena",
        "Ben": "sim-lanternfish/ben",
    }
    text = (
        "What's at risk - Ana's growth goal depends on review throughput [2][9]. - "
        "Analytics and Bench are fine.\n\n1. Lena's packet: her band is S3 [15]. 2. Hire."
    )
    reports = memory.owner_reports(
        text, people, source=source(1), run="run_1", tenant="sim-lanternfish"
    )
    # Each person's is what was said of them, verbatim, and nothing said of anyone else;
    # a name is a word ("Analytics" is not Ana, "Bench" not Ben).
    assert {r.subject_id: r.content for r in reports} == {
        "sim-lanternfish/ana": "Ana's growth goal depends on review throughput [2][9].",
        "sim-lanternfish/lena": "1. Lena's packet: her band is S3 [15].",
    }
    assert all(r.visibility == "self_owner" for r in reports)


def test_ec_mgr_006_redacting_feedback_annotates_it_and_opens_a_decision_for_the_mor():
    feedback = fact("feedback_given", "Concern: tests missing — path: pair with T.")
    done = memory.redacted(feedback, "That was a release-week exception.", NOW)
    assert done.fact.redacted_at is None
    assert done.fact.subject_response == "That was a release-week exception."
    assert done.decision is not None
    gone = memory.redacted(fact("preference", "Brief at 08:30"), "", NOW)
    assert gone.fact.redacted_at == NOW and gone.decision is None
    assert gone.fact.content == ""  # none of its words kept
