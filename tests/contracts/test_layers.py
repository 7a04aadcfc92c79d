"""Issue 11.8 and the architecture's rule: libs never import services, and a service never
imports another service's modules (it reaches another only through a subject)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_libs_import_no_service():
    wrong = {
        str(path.relative_to(ROOT)): sorted(m for m in _imports(path) if m.startswith("services"))
        for path in (ROOT / "libs").rglob("*.py")
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_a_service_imports_no_other_services_modules():
    wrong = {}
    for service in (ROOT / "services").iterdir():
        if not service.is_dir():
            continue
        for path in service.rglob("*.py"):
            others = [
                m
                for m in _imports(path)
                if m.startswith("services.") and not m.startswith(f"services.{service.name}")
            ]
            if others:
                wrong[str(path.relative_to(ROOT))] = others
    assert wrong == {}
