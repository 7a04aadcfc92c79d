"""`tether poa vectors FILE`: N passed, M failed, one line per failure, non-zero on any."""

import json
import subprocess
import sys

from tests.poa.vectors import OFFICIAL, VECTORS


def _run(path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "poa", "vectors", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_the_official_file_passes_whole():
    result = _run(VECTORS)
    assert (result.returncode, result.stdout) == (0, "28 passed, 0 failed\n")


def test_each_failure_is_named_with_what_was_expected_and_what_came(tmp_path):
    doctored = json.loads(json.dumps(OFFICIAL))
    doctored["verification"][1]["expect"]["rule_id"] = "something_else"
    path = tmp_path / "doctored.json"
    path.write_text(json.dumps(doctored))
    result = _run(path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "FAIL verification ask_over_limit: expected {'decision': 'ASK_USER', 'rule_id': "
        "'something_else'}, got {'decision': 'ASK_USER', 'rule_id': 'over_per_act_limit'}",
        "27 passed, 1 failed",
    ]
