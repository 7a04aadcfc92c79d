"""The grounding check (§3.4, §5.4): a draft is rejected if it uses an [n] not in the
receipt, states a number, date, name or status without a citation, exceeds its surface's
limit, or holds forbidden content. A statement is a paragraph or an item of a list in it,
cited where any of its sentences is (the reading under which both worked examples, §9 and
§10, are grounded). The patterns are the project's reading of §5.4, named so a rejection says
which rule it broke."""

import re
from collections.abc import Iterable

from services.chonk.domain.types import Draft, Receipt

__all__ = ["FORBIDDEN", "INSTEAD", "LIMITS", "STATUS_WORDS", "faults", "naming", "statements"]

LIMITS = {"sms": 480, "chat": 4000, "app": 4000, "console": 8000, "email": 8000}
_MARKER = re.compile(r"\[(\d+)\]")
# A statement: a paragraph, or an item of a list in it (" - " bullets, " 2. " numbers).
_STATEMENT = re.compile(r"\n+|\s+-\s+|\s+(?=\d{1,2}\.\s)")
_ENUMERATION = re.compile(r"^\d{1,2}\.\s")
_NUMBER = re.compile(r"\d")
STATUS_WORDS = re.compile(
    r"\b(blocked|merged|shipped|late|slipped|overdue|on track|at risk|green|yellow|red|"
    r"approved|rejected|stalled|closed|open)\b",
    re.IGNORECASE,
)
FORBIDDEN: dict[str, re.Pattern[str]] = {
    "health": re.compile(
        r"\b(surgery|illness|sick|diagnos\w*|therapy|medical|pregnan\w*|disabilit\w*|"
        r"mental health|hospital\w*)\b",
        re.IGNORECASE,
    ),
    "protected characteristics": re.compile(
        r"\b(religio\w*|ethnicit\w*|race|sexual orientation|gender identity|age \d+|"
        r"nationality)\b",
        re.IGNORECASE,
    ),
    "personal life": re.compile(
        r"\b(divorce|girlfriend|boyfriend|dating|family trouble)\b", re.IGNORECASE
    ),
    "ranking people": re.compile(
        r"\b(weakest|strongest|worst|best|lowest[- ]performing|top[- ]performing|bottom \d+)\b"
        r"[^.]*\b(engineer|employee|person|people|member|performer|report|reviewer|developer|"
        r"designer|manager|teammate|colleague)s?\b",
        re.IGNORECASE,
    ),
    "prediction about a person": re.compile(
        r"\b(likely|going|about|set) to (quit|leave|resign)\b|\bflight risk\b", re.IGNORECASE
    ),
    "private channels": re.compile(
        r"\b(in (a|their|his|her) DMs?|private (channel|message))", re.I
    ),
    "claiming to be human": re.compile(
        r"\b(I am|I'm) (a )?(human|real person)\b|\bas a (fellow )?human\b", re.IGNORECASE
    ),
    "keeping it from the manager of record": re.compile(
        r"\b(don'?t|do not) (tell|mention (this|it) to) (your )?(manager|MoR|boss)\b|"
        r"\bkeep (this|it) from (your )?(manager|MoR|boss)\b",
        re.IGNORECASE,
    ),
}


# What the regeneration is told instead, where the rule has a way to say the same thing.
INSTEAD: dict[str, str] = {
    "health": 'say only when they are out until ("out until the 14th"), never why',
    "ranking people": "speak of goals and projects, never of people against each other",
}


def _heading(statement: str) -> bool:
    """A few words with no sentence's end ("What's at risk") head what follows; they state
    nothing of their own."""
    return statement[-1] not in ".!?:;)" and len(statement.split()) <= 5


def naming(name: str) -> re.Pattern[str]:
    """What finds `name` in a statement: as a word, so "Ana" is not in "Analytics"."""
    return re.compile(rf"\b{re.escape(name)}\b")


def statements(text: str) -> list[str]:
    """What `text` states, one by one: each paragraph, or each item of a list in it."""
    return [s for s in (part.strip() for part in _STATEMENT.split(text)) if s]


def faults(draft: Draft, receipt: Receipt, *, names: Iterable[str] = ()) -> list[str]:
    """Every reason `draft` may not leave; none means it is grounded. `names` are the
    people and things of the context bundle a sentence may not name uncited."""
    found: list[str] = []
    known = {s.n for s in receipt.sources}
    used = {int(n) for n in _MARKER.findall(draft.body)}
    found += [f"[{n}] is not in the receipt" for n in sorted(used - known)]
    named_in = [(n, naming(n)) for n in names if n]
    for statement in statements(draft.body):
        if _MARKER.search(statement) or _heading(statement):
            continue
        bare = _ENUMERATION.sub("", statement)
        if _NUMBER.search(bare):
            found.append(f"a number or date without a citation: {statement!r}")
        elif STATUS_WORDS.search(bare):
            found.append(f"a status without a citation: {statement!r}")
        elif named := next((n for n, word in named_in if word.search(bare)), None):
            found.append(f"{named} named without a citation: {statement!r}")
    limit = LIMITS[draft.surface]
    if len(draft.body) > limit:
        found.append(f"{len(draft.body)} characters; {draft.surface} allows {limit}")
    found += [
        f"forbidden content ({rule}): {m.group(0)!r}"
        + (f"; {INSTEAD[rule]}" if rule in INSTEAD else "")
        for rule, pattern in FORBIDDEN.items()
        if (m := pattern.search(draft.body))
    ]
    return found
