"""The mod service, the ladder and the scheduler on the test stack, a gateway in front,
and people of a fresh org.

The mod service is the `mod_service` fixture of tests/conftest.py.
"""

import hashlib
from typing import Any

import msgspec
import pytest

from libs.contracts import ladder, mod, scheduler
from libs.contracts.ladder import SEND_MEANS
from tests.support import bearer, token

SERVED = (mod.CONTRACT, ladder.CONTRACT, scheduler.CONTRACT)


@pytest.fixture
async def api(client_for, gateway_settings, mod_service, ladder_service, scheduler_service):
    return await client_for(gateway_settings, services=SERVED)


class People(msgspec.Struct):
    """Tokens of a fresh org: ada and bob are members, root its admin, eve another org's
    admin; `agent` is ada's own agent with mod:write, `bare_agent` the same with mod:read alone,
    `root_agent` root's own agent with mod:write."""

    org: str
    ada: dict[str, str]
    bob: dict[str, str]
    root: dict[str, str]
    eve: dict[str, str]
    agent: dict[str, str]
    bare_agent: dict[str, str]
    root_agent: dict[str, str]


@pytest.fixture
def people(org) -> People:
    other = f"{org}-x"
    ada, root = f"{org}/ada", f"{org}/root"
    return People(
        org=org,
        ada=bearer(token(org=org, user=ada)),
        bob=bearer(token(org=org, user=f"{org}/bob")),
        root=bearer(token(org=org, user=root, roles=("admin",))),
        eve=bearer(token(org=other, user=f"{other}/eve", roles=("admin",))),
        agent=bearer(token(org=org, user=ada, act=f"agent:{ada}", roles=("mod:write",))),
        bare_agent=bearer(token(org=org, user=ada, act=f"agent:{ada}", roles=("mod:read",))),
        root_agent=bearer(
            token(org=org, user=root, act=f"agent:{root}", roles=("admin", "mod:write"))
        ),
    )


async def level(api, headers: dict, level_: str, window: str | None = None) -> None:
    """Set the person's default level (and window) through the ladder's own routes."""
    if window is not None:
        r = await api.put("/v1/ladder/window", json={"window": window}, headers=headers)
        assert r.status == 200, await r.text()
    body = {"level": level_, "scope": "default"}
    if level_ == "send":
        body["acknowledge"] = SEND_MEANS
    r = await api.put("/v1/ladder", json=body, headers=headers)
    assert r.status == 200, await r.text()


async def write(api, headers: dict, layer: str, ops: list[dict], base: int | None = None, **extra):
    """A layer write at `base` (the layer's current version if not given)."""
    if base is None:
        base = await version(api, headers, layer)
    return await api.post(
        f"/v1/mod/layers/{layer}", json={"base": base, "ops": ops, **extra}, headers=headers
    )


async def version(api, headers: dict, layer: str) -> int:
    r = await api.get(f"/v1/mod/layers/{layer}", headers=headers)
    assert r.status == 200, await r.text()
    return (await r.json())["version"]


async def refusal(response) -> tuple[int, str]:
    body = await response.json(content_type=None)
    return response.status, body["type"].rsplit(":", 1)[-1]


HIDE_BOARD = {"op": "hide", "kind": "apps", "id": "hanzo/board/board"}


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def weather(publisher: str = "acme", id_: str = "weather", **over: Any) -> dict[str, Any]:
    """hip-0528 §2's example mod, with the inline schema and build record tether reads."""
    manifest: dict[str, Any] = {
        "id": id_,
        "publisher": publisher,
        "title": "Weather",
        "version": "1.4.0",
        "contributes": {
            "apps": [{"id": id_, "title": "Weather", "icon": "cloud", "slots": ["side"]}],
            "views": [
                {"id": "week", "title": "This week", "app": id_, "route": "/week"},
                {"id": "forecast", "title": "Forecast", "slot": "hanzo/chat/chat:side"},
            ],
            "commands": [{"id": "refresh", "title": "Refresh the forecast"}],
            "settings": [
                {
                    "id": "units",
                    "title": "Units",
                    "scope": "user",
                    "schema": {"type": "string", "enum": ["metric", "imperial"]},
                }
            ],
            "tokens": [{"id": "sky", "title": "Sky", "values": ["day", "dusk", "night"]}],
            "agents": [{"id": "forecaster", "file": "agents/forecaster.md"}],
            "skills": [{"id": "forecast", "file": "skills/forecast/SKILL.md"}],
            "mcp": [{"id": id_, "tools": ["forecast"]}],
            "tools": [{"id": "forecast", "schema": "tools/forecast.json"}],
        },
        "provides": [{"service": "forecast"}],
        "uses": ["hanzo/chat#composer"],
        "permissions": ["todo:read", "host:notify", "net:api.weather.example"],
        "backend": {"kind": "wasm", "module": "backend/weather.wasm", "exports": ["forecast"]},
        "build": {
            "repo": f"{publisher}/{id_}",
            "commit": hashlib.sha1(id_.encode()).hexdigest(),
            "lockfile": digest("lock"),
            "toolchain": digest("node:22"),
            "digest": digest(f"{publisher}/{id_} bundle"),
        },
    }
    return manifest | over


async def install(api, headers: dict, manifest: dict[str, Any], **over: Any):
    body = {
        "manifest": manifest,
        "digest": manifest["build"]["digest"],
        "permissions": manifest.get("permissions", []),
    }
    return await api.post("/v1/mod/installs", json=body | over, headers=headers)


async def keep(api, headers: dict, draft_id: str):
    return await api.post(f"/v1/mod/drafts/{draft_id}/commit", json={}, headers=headers)
