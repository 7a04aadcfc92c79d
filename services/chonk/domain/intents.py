"""What a person writes a Chonk, read by keyword patterns: a call-out (EC-MGR-009), a
dispute (RC-MGR-02), "remember" (§10), WHY after a text (§7), and what no Chonk answers. A
question the shared never list reserves for a person (§2, EC-MGR-001) is answered by
saying so, naming who decides, and handing off to the Chief Human Officer, which asks the
person whether they want a packet; the asking Chonk decides nothing. A ranking of people is
declined (EC-MGR-004), and feedback about a colleague given anonymously is not kept
(EC-MGR-005), but conduct or safety may go to the manager of record as a packet."""

import hashlib
import re
from collections.abc import Mapping

import msgspec

from services.chonk.domain.types import ProposedAction

__all__ = [
    "ANONYMOUS",
    "CALL_OUT",
    "CONDUCT",
    "DISPUTE",
    "HUMAN_DECISIONS",
    "RANKING",
    "REMEMBER",
    "WHY",
    "Answer",
    "PacketOffer",
    "absent",
    "anonymous_declined",
    "digest",
    "heard",
    "human_decision",
    "manager_of",
    "never_answer",
    "packet_handoff",
    "packet_offer",
    "ranking_declined",
]

# The never list's decisions, as a person would ask about them; not what shares a word
# with them ("raise a PR", "pay attention", "a fire drill", "promote the post").
_SOMEONE = r"(me|him|her|them|someone|anyone|people)"
HUMAN_DECISIONS: dict[str, re.Pattern[str]] = {
    "compensation": re.compile(
        r"\b(a|my|her|his|their) raise\b|\bpay (rise|raise|increase|cut|band)\b|\bmy pay\b"
        r"|\b(salary|salaries|bonus|bonuses|compensation|equity)\b",
        re.I,
    ),
    "promotion": re.compile(
        r"\b(be|get|getting|being) promoted\b|\bpromotions?\b|\blevel up\b|\btitle change\b",
        re.I,
    ),
    "termination": re.compile(
        rf"\bfir(e|ing) {_SOMEONE}\b|\b(be|get|getting|being) fired\b|\blet {_SOMEONE} go\b"
        r"|\bterminat\w*|\blay ?offs?\b|\blaid off\b",
        re.I,
    ),
    "hiring": re.compile(r"\b(hire|hiring decision|offer letter)\b", re.I),
    "discipline": re.compile(
        r"\bdisciplin\w*|\bwritten warning\b|\bperformance improvement plan\b"
        rf"|\bput {_SOMEONE} on a pip\b",
        re.I,
    ),
}


# A question that asks a Chonk to rank people against each other (§5.4, EC-MGR-004).
_PEOPLE = (
    r"(engineer|employee|person|people|member|performer|report|reviewer|developer|designer|"
    r"manager|teammate|colleague)s?"
)
RANKING = re.compile(
    rf"\b(weakest|strongest|worst|best|lowest[- ]performing|top[- ]performing)\b[^?.]*\b{_PEOPLE}\b"
    rf"|\b(top|bottom)( \d+)? {_PEOPLE}\b"
    r"|\b(rank|stack[- ]rank|compare)\b[^?.]*\b(team|people|engineers|reports)\b",
    re.IGNORECASE,
)


# A person telling a Chonk that someone did not come in for their shift (EC-MGR-009).
CALL_OUT = re.compile(
    r"\b(didn'?t|did not|hasn'?t|has not) (show|come in|turn up)"
    r"|\bno[- ]show\b|\bcalled (out|in sick)\b|\bnot coming in\b"
    r"|\balone on the \w+",
    re.IGNORECASE,
)


# A person telling a Chonk that what it said is not so (RC-MGR-02's "that's wrong", "I
# never said that").
DISPUTE = re.compile(
    r"\b(that|this|it)(?:'?s| is| was) (not (true|right|correct|so)|wrong|false|incorrect|untrue)\b"
    r"|\bi (never said|didn'?t say|did not say) (that|this|it)\b|\bnot what i said\b",
    re.IGNORECASE,
)


# Feedback about someone that its giver asks to keep their name off (EC-MGR-005).
ANONYMOUS = re.compile(
    r"\banonymous(ly)?\b"
    r"|\b(don'?t|do not) (tell|let) (him|her|them)( know)? (it was|it's|it is|it came from) me\b"
    r"|\bwithout (my name|saying (it was|it's) me)\b|\bkeep (my name|me) out of it\b",
    re.IGNORECASE,
)


# A person asking a Chonk to keep something about them, in their words (§10: "say
# 'remember' and tell me the dates"); only as they begin, not "I don't remember".
REMEMBER = re.compile(r"^\W*remember\b", re.IGNORECASE)


# What a report about a colleague's conduct or safety speaks of (EC-MGR-005's escalation).
CONDUCT = re.compile(
    r"\b(harass\w*|bull(y|ied|ies|ying)|threat\w*|unsafe|safety|assault\w*|discriminat\w*"
    r"|abus(e|ed|ive)|inappropriate(ly)?|intimidat\w*)\b",
    re.IGNORECASE,
)

# A person asking what a text rests on (§7: an SMS ends "Reply WHY for sources").
WHY = re.compile(r"^\W*why\W*$", re.IGNORECASE)


def digest(person: str, text: str) -> str:
    """Who said what, as a key names it: never either."""
    return hashlib.sha256(f"{person}\n{text}".encode()).hexdigest()[:16]


def heard(person: str, text: str) -> str:
    """What a person said, as its records and what is made of it name it."""
    return f"heard_{digest(person, text)}"


def absent(text: str, names: dict[str, str]) -> str | None:
    """Whom a call-out message says is missing: the first of `names` (name → person) it
    names, by whole word."""
    return next(
        (person for name, person in names.items() if re.search(rf"\b{re.escape(name)}\b", text)),
        None,
    )


class Answer(msgspec.Struct, frozen=True):
    text: str
    actions: tuple[ProposedAction, ...]


def human_decision(text: str) -> str | None:
    """Which of the never list's decisions `text` asks about, if any."""
    return next((kind for kind, p in HUMAN_DECISIONS.items() if p.search(text)), None)


def manager_of(
    person: str, *, people: Mapping[str, str], managers: Mapping[str, str], owner: str
) -> tuple[str, str]:
    """Who decides for `person`, by name and by id: their manager of record as the tenant
    knows them (`people` name → id, `managers` name → name), else the tenant's owner."""
    names = {id_: name for name, id_ in people.items()}
    found = managers.get(names.get(person, ""))
    if found is not None and found in people:
        return found, people[found]
    return names.get(owner, owner), owner


def never_answer(decision: str, *, chonk: str, mor: str, person: str, receipt: str) -> Answer:
    """The reply (AUTONOMOUS) and, where the asker is not already the Chief Human Officer,
    the handoff that lets it prepare a HUMAN_ONLY packet if the person wants one."""
    who = "I'll" if chonk == "human" else "The Chief Human Officer will"
    text = (
        f"That's a {decision} question, and a person decides it: {mor}, your manager of "
        f"record. I can't decide it or promise anything about it. {who} ask you whether "
        f"you'd like a packet prepared for {mor}; nothing happens until you say."
    )
    handoff = packet_handoff(decision, person=person, mor=mor, receipt=receipt)
    return Answer(text=text, actions=() if chonk == "human" else (handoff,))


def packet_handoff(kind: str, *, person: str, mor: str, receipt: str) -> ProposedAction:
    """The handoff to the Chief Human Officer (AUTONOMOUS: it moves work inside the
    system) that lets it prepare a HUMAN_ONLY packet, for a never-list decision or for
    `conduct`, if the person wants one."""
    what = "raised a conduct or safety concern" if kind == "conduct" else f"asked about {kind}"
    return ProposedAction(
        kind="HANDOFF",
        to="human",
        text=f"{person} {what}; prepare a HUMAN_ONLY packet for {mor} if they want one",
        receipt_id=receipt,
    )


class PacketOffer(msgspec.Struct, frozen=True):
    """A packet the Chief Human Officer offers to prepare for a person's manager of
    record: what it is about, what it says (never the person's words, and no
    recommendation), and the question that asks the person whether they want it."""

    about: str
    text: str
    question: str


def packet_offer(kind: str, *, name: str, mor: str) -> PacketOffer:
    """For a never-list decision `name` asked about (EC-MGR-001), or for `conduct`, a
    conduct or safety concern they raised about a colleague (EC-MGR-005)."""
    if kind == "conduct":
        return PacketOffer(
            about="a conduct or safety concern",
            text=(
                f"{name} raised a conduct or safety concern about a colleague and asked for "
                "this packet, with their name on it, to talk it through with you. It holds "
                "none of their words. The Chief Human Officer recommends nothing: this is "
                "yours to decide."
            ),
            question=(
                f"What you describe is conduct or safety, which {mor} should hear about. "
                f"Would you like me to prepare a packet for {mor}, with your name on it? It "
                "says you raised a concern and would like to talk it through, none of your "
                f"words, and nothing happens until {mor} decides."
            ),
        )
    return PacketOffer(
        about=f"a question about {kind}",
        text=(
            f"{name} asked about {kind}, which you decide, and asked for this packet to talk "
            "it through with you. The Chief Human Officer recommends nothing: this is yours "
            "to decide."
        ),
        question=(
            f"You asked about {kind}, which {mor} decides. Would you like me to prepare a "
            f"packet for {mor}? It says that you asked about {kind} and would like to talk "
            f"it through; it recommends nothing, and nothing is decided until {mor} decides."
        ),
    )


def anonymous_declined(mor: str, *, conduct: bool, chonk: str) -> str:
    """EC-MGR-005: anonymous feedback is not kept; the paths that are (AUTONOMOUS,
    nothing written). Conduct or safety goes to the manager of record as a packet, which
    the Chief Human Officer offers to prepare."""
    text = (
        "I can't keep feedback about a colleague anonymously: feedback is kept only "
        "with who gave it, so the person it is about can see it and answer it. If you'd "
        "like, tell me again with your name on it, or talk it through with your manager "
        f"of record, {mor}. I haven't kept anything you said."
    )
    if conduct:
        who = "I'll" if chonk == "human" else "The Chief Human Officer will"
        text += (
            f" What you describe sounds like conduct or safety: {who} ask you whether you'd "
            f"like a packet prepared for {mor}."
        )
    return text


def ranking_declined(projects: list[str], org: str) -> Answer:
    """EC-MGR-004: declined plainly, with what can be said without naming anyone: goal
    health per project and the org's calibration summary (AUTONOMOUS, nothing proposed)."""
    offered = ", ".join(projects) if projects else "each project"
    return Answer(
        text=(
            "I don't rank people against each other, so I won't say who is weakest or "
            "strongest. What I can show you instead: goal health per project "
            f"({offered}), and the calibration summary for {org}, both without names. "
            "Which would help?"
        ),
        actions=(),
    )
