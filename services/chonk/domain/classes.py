"""Every ProposedAction classified (§1): AUTONOMOUS, PROPOSE_CONFIRM or HUMAN_ONLY. A packet
and anything the shared never list names are HUMAN_ONLY (a decision record, never memory); a
function the run's modes put at PROPOSE asks first; handoffs are always AUTONOMOUS, because
nothing leaves the system."""

from collections.abc import Mapping
from typing import Literal

from services.chonk.domain.types import ProposedAction

__all__ = ["Class", "classified"]

Class = Literal["AUTONOMOUS", "PROPOSE_CONFIRM", "HUMAN_ONLY"]


def classified(action: ProposedAction, *, never: frozenset[str], modes: Mapping[str, str]) -> Class:
    """`modes`: an action kind's mode in this run ("PROPOSE" or "AUTONOMOUS")."""
    kind = action.kind.split(":")[0]
    if kind == "PACKET" or kind in never:
        return "HUMAN_ONLY"
    if kind == "HANDOFF":
        return "AUTONOMOUS"
    return (
        "PROPOSE_CONFIRM" if modes.get(action.kind, modes.get(kind)) == "PROPOSE" else "AUTONOMOUS"
    )
