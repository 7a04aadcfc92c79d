"""EC-MGR-001: Ana asks the Chief Build Officer "can I get a raise?" on sim-lanternfish. The
reply says a human decides, names Tomás (her MoR), and hands off to the Chief Human Officer
to prepare a packet if she wants one; nothing about compensation is in build's allowlist."""

from services.chonk.domain.classes import classified
from services.chonk.domain.intents import human_decision, never_answer
from services.chonk.main import shipped

CHARTERS, NEVER = shipped()


def test_ec_mgr_001_a_raise_asked_of_build_names_the_mor_and_hands_off_to_human():
    asked = "hey, can I get a raise?"
    decision = human_decision(asked)
    assert decision == "compensation"
    assert not {a for a in CHARTERS["build"].action_allowlist if "COMPENSATION" in a}
    answer = never_answer(
        decision, chonk="build", mor="Tomás", person="sim-lanternfish/ana", receipt="rcp_1"
    )
    assert "Tomás" in answer.text and "a person decides it" in answer.text
    [handoff] = answer.actions
    assert (handoff.kind, handoff.to) == ("HANDOFF", "human")
    assert handoff.kind in CHARTERS["build"].action_allowlist
    assert classified(handoff, never=NEVER, modes={"HANDOFF": "PROPOSE"}) == "AUTONOMOUS"


def test_the_chief_human_officer_asked_itself_prepares_no_handoff_to_itself():
    answer = never_answer("promotion", chonk="human", mor="Tomás", person="p", receipt="r")
    assert answer.actions == ()
    assert human_decision("what's the status of #412?") is None


def test_what_reads_as_a_question_a_person_decides_and_what_only_shares_a_word():
    asked = {
        "compensation": ("can I get a raise?", "What's my pay band?", "when are bonuses paid"),
        "promotion": ("Will I be promoted this cycle?", "is there a promotion for me"),
        "termination": ("should we fire him?", "am I getting fired", "any layoffs coming?"),
        "discipline": ("Should Ben get a written warning?", "put him on a PIP"),
    }
    for decision, texts in asked.items():
        for text in texts:
            assert human_decision(text) == decision, text
    for text in (
        "I'll raise it with Ben",
        "can you pay attention to #412?",
        "we have a fire drill at 3",
        "please promote the launch post",
        "pip install failed on my laptop",
        "let it go, the PR merged",
    ):
        assert human_decision(text) is None, text
