"""All 28 official vectors pass, read from the file (poa-verifier §7)."""

import hashlib
from pathlib import Path

import pytest

from services.poa.domain import contain, verify
from tests.poa.vectors import OFFICIAL, VECTORS

SHARED = Path(__file__).resolve().parents[3] / "shared" / "vectors" / "poa-1.3-official.json"


def test_the_vectors_are_a_byte_identical_copy_with_their_sha256_beside_them():
    """Compared with ../shared every time: a missing official file fails, never skips."""
    recorded = (VECTORS.parent / (VECTORS.name + ".sha256")).read_text().split()[0]
    assert hashlib.sha256(VECTORS.read_bytes()).hexdigest() == recorded
    assert SHARED.is_file(), f"the official vectors are not at {SHARED}"
    assert VECTORS.read_bytes() == SHARED.read_bytes()


def test_the_file_holds_21_verification_and_7_containment_cases():
    assert (len(OFFICIAL["verification"]), len(OFFICIAL["containment"])) == (21, 7)


@pytest.mark.parametrize("vector", OFFICIAL["verification"], ids=lambda v: v["id"])
def test_verification(vector):
    decision = verify(vector["grant"], vector["parents"], vector["envelope"], vector["state"])
    assert {"decision": decision.decision, "rule_id": decision.rule_id} == vector["expect"]


@pytest.mark.parametrize("vector", OFFICIAL["containment"], ids=lambda v: v["id"])
def test_containment(vector):
    result = contain(vector["parent"], vector["child"])
    assert {"ok": result.ok, "violations": list(result.violations)} == vector["expect"]
