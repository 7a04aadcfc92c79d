"""The Power-of-Action procedure (spec/poa-verifier.md) as pure functions over JSON values."""

from services.poa.domain.contain import contain
from services.poa.domain.decisions import ALLOW, ASK_USER, DENY, Containment, Decision
from services.poa.domain.verify import verify

__all__ = ["ALLOW", "ASK_USER", "DENY", "Containment", "Decision", "contain", "verify"]
