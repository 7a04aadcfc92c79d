"""hip-0524 §16.12: neither "App" nor "Dev" appears as a noun in a route, a package name or
a schema field."""

import re
from pathlib import Path

import msgspec

from libs.contracts import SERVICES, mod
from services.gateway.routes import ROUTES

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_WORDS = re.compile(r"(^|[^a-z])(apps?|dev)([^a-z]|$)", re.IGNORECASE)
# hip-0528 §1: an app is a place in the host, the host-composition axis word hip-0524 §12
# point 1 names as the specification's own (the product word is the connected service).
# Only the mod contract's types carry it, and only as `apps` (the kind) and `app` (a view's).
AXIS_WORDS = {"app", "apps"}
AXIS_TYPES = {
    name for name, t in vars(mod).items() if isinstance(t, type) and t.__module__ == mod.__name__
}


def test_no_route_says_app_or_dev():
    assert [r.path for r in ROUTES if PRODUCT_WORDS.search(r.path)] == []


def test_no_package_says_app_or_dev():
    packages = [p.relative_to(ROOT) for p in ROOT.glob("*/**/__init__.py")]
    assert packages
    assert [str(p) for p in packages if any(PRODUCT_WORDS.search(part) for part in p.parts)] == []


def test_no_schema_field_or_subject_says_app_or_dev():
    subjects = [s for svc in SERVICES for s in svc.subjects]
    types = {t for s in subjects for t in (s.request, s.reply)}
    types |= {e.type for svc in SERVICES for e in svc.events}
    _, schemas = msgspec.json.schema_components(sorted(types, key=lambda t: t.__name__))
    fields = _fields(schemas)
    assert {"author_kind", "on_behalf_of", "capability_defaults"} <= fields  # nested ones too
    assert sorted(f for f in fields if PRODUCT_WORDS.search(f)) == []
    axis = _fields({k: v for k, v in schemas.items() if k in AXIS_TYPES}, axis=True)
    assert {f for f in axis if PRODUCT_WORDS.search(f)} == AXIS_WORDS
    assert [s.name for s in subjects if PRODUCT_WORDS.search(s.name)] == []


async def test_the_served_api_document_says_neither(api):
    """The running gateway's own OpenAPI document: no path, parameter or field says it."""
    document = await (await api.get("/v1/openapi.json")).json()
    assert [p for p in document["paths"] if PRODUCT_WORDS.search(p)] == []
    names = _fields(document["components"]["schemas"])
    names |= {
        parameter["name"]
        for path in document["paths"].values()
        for operation in path.values()
        for parameter in operation.get("parameters", [])
    }
    assert {"author_kind", "acknowledge"} <= names
    assert sorted(n for n in names if PRODUCT_WORDS.search(n)) == []


def _fields(schemas: dict, *, axis: bool = False) -> set[str]:
    """Every property name of `schemas`; the axis word of hip-0528 left out of its own
    types unless `axis`."""
    return {
        name
        for type_, schema in schemas.items()
        for name in schema.get("properties", {})
        if axis or type_ not in AXIS_TYPES or name not in AXIS_WORDS
    }
