"""The one image: built from a committed lock, with every package the processes import, as
a user of its own on a read-only root filesystem."""

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).parents[2]
LOCK = (ROOT / "requirements.lock").read_text()
# Imported only by `tether up`, which embeds its servers; never by a running process.
OPERATOR_TOOLS = {"libs/stack"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _locked() -> dict[str, str]:
    return {
        m[1].lower(): m[2]
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", LOCK, re.MULTILINE)
    }


def test_every_runtime_dependency_is_pinned_with_its_hashes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    locked = _locked()
    assert {_name(r) for r in project["dependencies"]} <= set(locked)
    entries = re.split(r"\n(?=[A-Za-z])", LOCK.split("\n\n", 1)[-1])
    assert all("--hash=sha256:" in e for e in entries if "==" in e)


def test_every_package_a_process_imports_is_in_the_image():
    dists = packages_distributions()
    imported: set[str] = set()
    for top in ("libs", "services", "cli"):
        for path in (ROOT / top).rglob("*.py"):
            if any(str(path.relative_to(ROOT)).startswith(t) for t in OPERATOR_TOOLS):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    third_party = {
        m for m in imported
        if m not in sys.stdlib_module_names and m not in ("libs", "services", "cli")
    }  # fmt: skip
    needed = {_name(d) for m in third_party for d in dists.get(m, [m])}
    assert needed <= set(_locked()), needed - set(_locked())


def test_the_image_installs_the_lock_offline_and_runs_as_no_one():
    dockerfile = (ROOT / "Dockerfile").read_text()
    install = re.search(r"pip install(?:[^\n]*\\\n)*[^\n]*", dockerfile)
    assert install is not None
    assert {"--no-index", "--require-hashes", "requirements.lock"} <= set(
        re.findall(r"--no-index|--require-hashes|requirements\.lock", install.group(0))
    )
    assert len(re.findall(r"pip install", dockerfile)) == 1  # nothing from an index
    assert re.search(r"^USER 10001:10001$", dockerfile, re.MULTILINE)
    assert "PYTHONDONTWRITEBYTECODE=1" in dockerfile and "compileall" in dockerfile
