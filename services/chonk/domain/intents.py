"""What a person asks a Chonk, read for the shared never list (§2, EC-MGR-001): a question a
human decides is answered by saying so, naming who decides, and offering to have the Chief
Human Officer prepare a packet; the asking Chonk decides nothing."""

import re

import msgspec

from services.chonk.domain.types import ProposedAction

__all__ = ["HUMAN_DECISIONS", "Answer", "human_decision", "never_answer"]

# The never list's decisions, as a person would ask about them.
HUMAN_DECISIONS: dict[str, re.Pattern[str]] = {
    "compensation": re.compile(r"\b(raise|salary|pay|bonus|compensation|equity)\b", re.I),
    "promotion": re.compile(r"\b(promot\w*|level up|title change)\b", re.I),
    "termination": re.compile(r"\b(fire|fired|let go|terminat\w*|lay ?off)\b", re.I),
    "hiring": re.compile(r"\b(hire|hiring decision|offer letter)\b", re.I),
    "discipline": re.compile(r"\b(disciplin\w*|written warning|PIP)\b", re.I),
}


class Answer(msgspec.Struct, frozen=True):
    text: str
    actions: tuple[ProposedAction, ...]


def human_decision(text: str) -> str | None:
    """Which of the never list's decisions `text` asks about, if any."""
    return next((kind for kind, p in HUMAN_DECISIONS.items() if p.search(text)), None)


def never_answer(decision: str, *, chonk: str, mor: str, person: str, receipt: str) -> Answer:
    """The reply (AUTONOMOUS) and, where the asker is not already the Chief Human Officer,
    the handoff that lets it prepare a HUMAN_ONLY packet if the person wants one."""
    text = (
        f"That's a {decision} question, and a person decides it: {mor}, your manager of "
        "record. I can't decide it or promise anything about it. If you'd like, the Chief "
        f"Human Officer will prepare a packet for {mor} with you; say yes and it starts."
    )
    handoff = ProposedAction(
        kind="HANDOFF",
        to="human",
        text=f"{person} asked about {decision}; prepare a HUMAN_ONLY packet for {mor} if "
        "they want one",
        receipt_id=receipt,
    )
    return Answer(text=text, actions=() if chonk == "human" else (handoff,))
