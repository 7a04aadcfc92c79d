"""What verification answers (poa-verifier §1.1), in the contract's types."""

from libs.contracts.poa import Containment, Decision

__all__ = [
    "ALLOW",
    "ASK_USER",
    "DENY",
    "MALFORMED",
    "Containment",
    "Decision",
    "allow",
    "ask",
    "deny",
]

ALLOW, ASK_USER, DENY = "ALLOW", "ASK_USER", "DENY"
# The project's rule for input no rule can read at all: it fails closed.
MALFORMED = "malformed_input"


def allow(rule_id: str, act_id: str | None) -> Decision:
    return Decision(decision=ALLOW, rule_id=rule_id, act_id=act_id)


def ask(rule_id: str, act_id: str | None) -> Decision:
    return Decision(decision=ASK_USER, rule_id=rule_id, act_id=act_id)


def deny(rule_id: str, act_id: str | None = None) -> Decision:
    return Decision(decision=DENY, rule_id=rule_id, act_id=act_id)
