"""What verification and containment answer (poa-verifier §1.1, §4)."""

import msgspec

__all__ = ["ALLOW", "ASK_USER", "DENY", "MALFORMED", "Containment", "Decision"]

ALLOW, ASK_USER, DENY = "ALLOW", "ASK_USER", "DENY"
# The project's rule for input no rule can read at all: it fails closed.
MALFORMED = "malformed_input"


class Decision(msgspec.Struct, frozen=True, omit_defaults=True):
    """One decision and the rule that made it; `act_id` once the act is resolved.

    `violations` and `parent_id` come with `not_contained` (V11).
    """

    decision: str
    rule_id: str
    act_id: str | None = None
    violations: tuple[str, ...] = ()
    parent_id: str | None = None


class Containment(msgspec.Struct, frozen=True):
    """Whether a child carries no more than its parent, and every way it carries more."""

    ok: bool
    violations: tuple[str, ...] = ()
