"""The tone dial (§7.2): the tenant's policy, under the context's ceiling, a surface's
override standing for the dial there. What the dial never changes (facts, citations, the
recommendation, the path of a concern, the non-human disclosure, directness) is not an
input here.

§7.2 writes the surface's override after the ceiling, so an override would lift a packet's
tone above its 0.0; RC-MGR-03 enforces the ceilings "not only in the prompt" and counts a
message above one as a misfire, so the ceiling is applied last."""

import re

from libs.contracts.chonk import TonePolicy
from services.chonk.domain.charters import DIRECTNESS_FLOOR
from services.chonk.domain.types import VoiceProfile

__all__ = ["CEILING", "SHOWN", "TonePolicy", "ceiling", "directness", "faults", "read", "tone"]

# None: the dial itself; "lift": the dial plus 0.1, at most 1.
CEILING: dict[str, float | str | None] = {
    "safety": 0.0,
    "human_only_packet": 0.0,
    "wellbeing": 0.2,
    "feedback_concern": 0.2,
    "rejection_notice": 0.2,
    "escalation": 0.3,
    "incident": 0.3,
    "approval_request": 0.5,
    "plan_change": 0.5,
    "brief": None,
    "checkin": None,
    "reply": None,
    "review": None,
    "owner_update": None,
    "celebration": "lift",
    "all_hands": "lift",
    "launch": "lift",
}


def tone(policy: TonePolicy, context: str, surface: str) -> float:
    value = min(max(policy.default, policy.min), policy.max)
    if CEILING[context] == "lift":
        value = min(value + 0.1, 1.0)
    value = policy.surface_overrides.get(surface, value)
    return round(min(value, ceiling(policy, context)), 3)


def ceiling(policy: TonePolicy, context: str) -> float:
    """The context's ceiling: §7.2's (1.0 where it is the dial), or lower, where the owner
    lowered it."""
    fixed = CEILING[context]
    return min(fixed if isinstance(fixed, float) else 1.0, policy.ceilings.get(context, 1.0))


def faults(policy: TonePolicy) -> list[str]:
    """What makes a policy one no run can use: a dial whose least is above its most, and a
    ceiling the owner would raise (they may only lower one, RC-MGR-03)."""
    found = []
    if policy.min > policy.max:
        found.append(f"tone.min {policy.min} is above tone.max {policy.max}")
    for context, value in sorted(policy.ceilings.items()):
        if isinstance(fixed := CEILING[context], float) and value > fixed:
            found.append(
                f"tone.ceilings.{context}: {value} is above its ceiling {fixed}; a ceiling may "
                "only be lowered"
            )
    return found


# What a body shows of character, and the least tone each shows (RC-MGR-03 reads the body
# as well as the writer's toneUsed): an emoji, which §7.2 sets among what the dial adds,
# in no context whose ceiling is 0.5 or lower; an exclamation, or one of the Chonk's
# signature phrases (a character reference), in none "plain and procedural" (0.0) or where
# "jokes do not" go (0.2). Chosen where §7.2 gives examples and no numbers.
SHOWN = {"an emoji": 0.6, "an exclamation": 0.3, "a signature phrase": 0.3}
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f]")


def read(body: str, voice: VoiceProfile) -> tuple[float, tuple[str, ...]]:
    """The least tone `body` shows, whatever its writer says it used, and what shows it."""
    shows = [
        what
        for what, shown in (
            ("an emoji", _EMOJI.search(body)),
            ("an exclamation", "!" in body),
            ("a signature phrase", any(p.lower() in body.lower() for p in voice.signature_phrases)),
        )
        if shown
    ]
    return max((SHOWN[what] for what in shows), default=0.0), tuple(shows)


def directness(voice: VoiceProfile) -> float:
    """Candor is a commitment: no voice, renamed or re-skinned, goes below the floor."""
    return max(voice.directness, DIRECTNESS_FLOOR)
