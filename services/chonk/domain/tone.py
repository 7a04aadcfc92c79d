"""The tone dial (§7.2): the tenant's policy, under the context's ceiling, unless the
surface overrides it. What the dial never changes (facts, citations, the recommendation,
the path of a concern, the non-human disclosure, directness) is not an input here."""

import msgspec

from services.chonk.domain.charters import DIRECTNESS_FLOOR
from services.chonk.domain.types import VoiceProfile

__all__ = ["CEILING", "TonePolicy", "directness", "tone"]

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


class TonePolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    default: float = 0.5
    min: float = 0.0
    max: float = 1.0
    surface_overrides: dict[str, float] = {}


def tone(policy: TonePolicy, context: str, surface: str) -> float:
    value = min(max(policy.default, policy.min), policy.max)
    match CEILING[context]:
        case float() as ceiling:
            value = min(value, ceiling)
        case "lift":
            value = min(value + 0.1, 1.0)
    return round(policy.surface_overrides.get(surface, value), 3)


def directness(voice: VoiceProfile) -> float:
    """Candor is a commitment: no voice, renamed or re-skinned, goes below the floor."""
    return max(voice.directness, DIRECTNESS_FLOOR)
