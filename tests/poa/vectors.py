"""The official Power-of-Action vectors, read from vectors/, and ways to derive cases from them."""

import copy
import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "poa-1.3-official.json"
OFFICIAL = json.loads(VECTORS.read_text())


def case(section: str, case_id: str) -> dict[str, Any]:
    """A deep copy of one official case, free to mutate."""
    found = next(c for c in OFFICIAL[section] if c["id"] == case_id)
    return copy.deepcopy(found)


def put(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set `a.b.0.c` in a nested JSON value (creating objects on the way); returns it."""
    *parents, last = path.split(".")
    node: Any = document
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return document


def drop(document: dict[str, Any], path: str) -> dict[str, Any]:
    *parents, last = path.split(".")
    node: Any = document
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    del node[last]
    return document
