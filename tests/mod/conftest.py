"""The mod service, the ladder and the scheduler on the test stack, a gateway in front,
and people of a fresh org.

A module that watches a window end overrides `mod_clock` with one running behind, so a
one-minute window ends a few real seconds after the draft; one that watches a draft
expire overrides `draft_ttl`.
"""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.contracts import ladder, mod, scheduler
from libs.contracts.ladder import SEND_MEANS
from services.mod.main import serve as serve_mod
from tests.support import bearer, serving, token

SERVED = (mod.CONTRACT, ladder.CONTRACT, scheduler.CONTRACT)


@pytest.fixture
def mod_clock() -> Callable[[], datetime]:
    return lambda: datetime.now(UTC)


@pytest.fixture
def draft_ttl() -> timedelta:
    return timedelta(days=1)


@pytest.fixture
def reviewer() -> str:
    return "manifest"


@pytest.fixture
async def mod_service(settings_for, audit_service, mod_clock, draft_ttl, reviewer):
    async with serving(
        mod.CONTRACT,
        settings_for("mod"),
        lambda svc: serve_mod(svc, mod_clock, draft_ttl=draft_ttl, review=reviewer),
    ) as svc:
        yield svc


@pytest.fixture
async def api(client_for, gateway_settings, mod_service, ladder_service, scheduler_service):
    return await client_for(gateway_settings, services=SERVED)


class People(msgspec.Struct):
    """Tokens of a fresh org: ada and bob are members, root its admin, eve another org's
    admin; `agent` is ada's own agent with mod:write, `bare_agent` the same without it,
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
        bare_agent=bearer(token(org=org, user=ada, act=f"agent:{ada}")),
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
