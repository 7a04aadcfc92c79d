"""Running a vector file in the official shape (poa-verifier §7)."""

from decimal import Decimal
from typing import Any

import msgspec

from services.poa.domain.contain import contain
from services.poa.domain.verify import verify

__all__ = ["Outcome", "decode", "run"]

# Non-integers are read as exact decimals, so money is never a binary float.
decode = msgspec.json.Decoder(float_hook=Decimal).decode


class Outcome(msgspec.Struct, frozen=True):
    section: str
    case_id: str
    expected: dict[str, Any]
    actual: dict[str, Any]

    @property
    def passed(self) -> bool:
        return self.expected == self.actual


def run(document: Any) -> list[Outcome]:
    """Every case of both sections, as given; only `expect` is compared."""
    outcomes = []
    for c in _cases(document, "verification"):
        d = verify(c.get("grant"), c.get("parents"), c.get("envelope"), c.get("state"))
        actual = {"decision": d.decision, "rule_id": d.rule_id}
        outcomes.append(Outcome("verification", str(c.get("id")), c.get("expect"), actual))
    for c in _cases(document, "containment"):
        r = contain(c.get("parent"), c.get("child"))
        actual = {"ok": r.ok, "violations": list(r.violations)}
        outcomes.append(Outcome("containment", str(c.get("id")), c.get("expect"), actual))
    return outcomes


def _cases(document: Any, section: str) -> list[dict[str, Any]]:
    cases = document.get(section) if isinstance(document, dict) else None
    return [c for c in cases if isinstance(c, dict)] if isinstance(cases, list) else []
