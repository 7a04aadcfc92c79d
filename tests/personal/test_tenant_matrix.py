"""Issue 16: the cross-tenant matrix, a permanent test.

Every route of the route table that names a resource is called, on a resource made fresh
for the call, as six callers: its owner, another member of the org, the org's admin, a
member of another org, the owner's own agent, and another person's agent. Each cell's
status is the matrix's; a resource no caller may reach answers 404, or 403 where the spec
says the caller may know it exists (an agent refused what only its person may do). No
answer to anyone but the owner and the owner's agent holds the owner's words.

A route that names a resource and has no row here fails `test_every_resource_route_has_
its_row`: a route added later is added to the matrix with it.
"""

import copy
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from libs.contracts import SERVICES
from services.gateway.routes import ROUTES
from tests.mod.conftest import weather
from tests.personal.conftest import People, announce, eventually, fresh_number, set_level
from tests.personal.test_delivery import _sent_by_line as sent_by_line
from tests.personal.test_delivery import status
from tests.personal.test_hip0524_09_personal_line import code_sent
from tests.personal.test_hip0524_09_personal_line import connect as connect_line
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.poa.vectors import case
from tests.support import bearer, set_plan, token

CALLERS = ("owner", "member", "admin", "stranger", "own_agent", "other_agent")
SIM = "sim-lanternfish"  # the Chonks' tenant: its runs and facts are the chonk rows'


@pytest.fixture
async def api(
    client_for,
    gateway_settings,
    agents_service,
    rooms_service,
    ladder_service,
    scheduler_service,
    poa_service,
    mod_service,
    chonk_service,
):
    return await client_for(gateway_settings, services=SERVICES)


@dataclass
class World:
    """A fresh org: ada owns what each row makes; cy shares her rooms (so a room has
    someone to talk to her) and is never a caller."""

    api: Any
    people: People
    operator: Any
    secret: str

    @property
    def org(self) -> str:
        return self.people.org

    def who(self, name: str, **claims: Any) -> dict[str, str]:
        org = SIM if name in ("ana", "priya", "ben") else self.org
        return bearer(token(org=org, user=f"{org}/{name}", **claims))

    def caller(self, name: str, *, owner: str = "ada", member: str = "bob") -> dict[str, str]:
        org = SIM if owner in ("ana", "priya") else self.org
        return {
            "owner": self.who(owner),
            "member": self.who(member),
            "admin": bearer(token(org=org, user=f"{org}/root", roles=("admin",))),
            "stranger": bearer(token(org=f"{org}-x", user=f"{org}-x/eve")),
            "own_agent": self.who(owner, act=f"agent:{org}/{owner}", roles=("mod:write",)),
            "other_agent": self.who(member, act=f"agent:{org}/{member}", roles=("mod:write",)),
        }[name]

    async def ok(self, method: str, path: str, headers: dict, body: Any = None) -> dict:
        r = await self.api.request(method, path, json=body, headers=headers)
        assert r.status < 300, (method, path, r.status, await r.text())
        return await r.json(content_type=None) if r.status != 204 else {}

    # What the rows make, each owned by ada.

    async def room(self, *members: str) -> str:
        body = {"title": self.secret, "members": [f"{self.org}/{m}" for m in members]}
        return (await self.ok("POST", "/v1/rooms", self.who("ada"), body))["id"]

    async def said(self, room: str) -> int:
        body = {"text": self.secret}
        return (await self.ok("POST", f"/v1/rooms/{room}/messages", self.who("ada"), body))["seq"]

    async def question(self) -> tuple[str, int]:
        """Cy asks Ada, in their room."""
        room = await self.room("cy")
        body = {"text": self.secret, "to": f"{self.org}/ada", "options": ["yes", "no"]}
        asked = await self.ok("POST", f"/v1/rooms/{room}/questions", self.who("cy"), body)
        return room, asked["seq"]

    async def drafted(self) -> tuple[str, str]:
        """Cy writes to Ada; her agent drafts its reply."""
        room = await self.room("cy")
        body = {"text": f"{self.secret}?", "to": f"{self.org}/ada"}
        await self.ok("POST", f"/v1/rooms/{room}/messages", self.who("cy"), body)

        async def draft() -> str | None:
            found = await self.ok("GET", f"/v1/rooms/{room}/drafts", self.who("ada"))
            return next((d["id"] for d in found["drafts"] if d["state"] == "open"), None)

        draft_id = await eventually(draft)
        assert draft_id, "no draft"
        return room, draft_id

    async def replied(self, level: str, listed: str) -> str:
        """Cy writes to Ada; her agent's reply, routed by her ladder at `level`, waits in
        her `listed` (`windows` or `confirmations`): its id. The agent routes it itself, as
        it would any message to her: a second route of the same reply with other words
        would be refused its key."""
        await set_level(self.api, self.who("ada"), level)
        room = await self.room("cy")
        body = {"text": f"{self.secret}?", "to": f"{self.org}/ada"}
        await self.ok("POST", f"/v1/rooms/{room}/messages", self.who("cy"), body)

        async def waiting() -> str | None:
            found = await self.ok("GET", f"/v1/{listed}", self.who("ada"))
            return next((x["id"] for x in found[listed] if x["room"] == room), None)

        return await eventually(waiting)

    async def grant(self) -> str:
        """Ada's grant, whose delegate is her own agent."""
        grant = valid_now(root_grant(f"{self.org}/ada"))
        grant["grant_id"] = f"poa_{secrets.token_hex(6)}"
        grant["delegate"]["sub"] = f"agent:{self.org}/ada"
        grant["purpose"] = self.secret
        return (await self.ok("POST", "/v1/poa/grants", self.who("ada"), {"grant": grant}))["id"]

    async def ask(self) -> str:
        grant = await self.grant()
        envelope = purchase(140, actor=f"agent:{self.org}/ada")
        agent = self.caller("own_agent")
        path = f"/v1/poa/grants/{grant}/acts"
        return (await self.ok("POST", path, agent, {"envelope": envelope}))["ask"]

    async def mod_draft(self) -> str:
        base = (await self.ok("GET", "/v1/mod/layers/user", self.who("ada")))["version"]
        op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Mine"}
        body = {"base": base, "ops": [op], "note": self.secret}
        written = await self.ok("POST", "/v1/mod/layers/user", self.caller("own_agent"), body)
        return written["draft"]["id"]

    async def layer(self) -> int:
        """Ada's layer, noted with the secret: its version."""
        base = (await self.ok("GET", "/v1/mod/layers/user", self.who("ada")))["version"]
        op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Secret"}
        body = {"base": base, "ops": [op], "note": self.secret}
        return (await self.ok("POST", "/v1/mod/layers/user", self.who("ada"), body))["version"]

    async def no_line(self) -> None:
        gone = await self.api.delete("/v1/lines/sms", headers=self.who("ada"))
        assert gone.status in (200, 404), await gone.text()

    async def line(self, *, proven: bool) -> dict:
        """Ada's sms line, made anew: claimed, and proven with its code if `proven`."""
        await self.no_line()
        if proven:
            return await connect_line(self.api, self.operator, self.people)
        body = {"transport": "sms", "address": fresh_number(), "credential": self.secret}
        return await self.ok("POST", "/v1/lines", self.who("ada"), body)

    async def run(self) -> dict:
        priya = bearer(token(org=SIM, user=f"{SIM}/priya", roles=("admin",)))
        body = {"tenant": SIM, "run": "checkin_ana"}
        return await self.ok("POST", "/v1/chonk/runs", priya, body)

    async def cadence(self) -> str:
        priya = bearer(token(org=SIM, user=f"{SIM}/priya", roles=("admin",)))
        body = {"tenant": SIM, "cadence": "cad_owner_update"}
        return (await self.ok("POST", "/v1/chonk/cadences", priya, body))["cadence"]


Make = Callable[[World], Awaitable[tuple[str, Any]]]


@dataclass(frozen=True)
class Row:
    make: Make  # a fresh resource: the call's path and body
    cells: dict[str, int]  # caller → the status answered
    owned_by: str = "ada"
    # Made once for the whole row, the owner called last: a person's line is one of a kind.
    shared: bool = False


def row(make: Make, owner: int, member: int, admin: int, stranger: int, own_agent: int,
        other_agent: int, **kw: Any) -> Row:  # fmt: skip
    statuses = (owner, member, admin, stranger, own_agent, other_agent)
    return Row(make, dict(zip(CALLERS, statuses, strict=True)), **kw)


async def _grant(w: World) -> tuple[str, Any]:
    return f"/v1/poa/grants/{await w.grant()}", None


async def _revoke(w: World) -> tuple[str, Any]:
    return f"/v1/poa/grants/{await w.grant()}/revoke", {}


async def _children(w: World) -> tuple[str, Any]:
    parent = await w.grant()
    child = copy.deepcopy(case("verification", "child_within_parent")["grant"])
    child = valid_now(child)
    child["principal"]["sub"] = f"{w.org}/ada"
    child["grant_id"] = f"poa_{secrets.token_hex(6)}"
    child["delegation"]["chain"] = [{"grant_id": parent, "delegate_sub": f"agent:{w.org}/ada"}]
    return f"/v1/poa/grants/{parent}/children", {"child": child}


async def _act(w: World) -> tuple[str, Any]:
    envelope = purchase(40, actor=f"agent:{w.org}/ada")
    return f"/v1/poa/grants/{await w.grant()}/acts", {"envelope": envelope}


async def _ask(w: World) -> tuple[str, Any]:
    return f"/v1/poa/asks/{await w.ask()}", None


async def _answer_ask(w: World) -> tuple[str, Any]:
    return f"/v1/poa/asks/{await w.ask()}/answer", {"answer": "decline"}


async def _room(w: World) -> tuple[str, Any]:
    return f"/v1/rooms/{await w.room()}", None


async def _messages(w: World) -> tuple[str, Any]:
    room = await w.room()
    await w.said(room)
    return f"/v1/rooms/{room}/messages", None


async def _send(w: World) -> tuple[str, Any]:
    return f"/v1/rooms/{await w.room()}/messages", {"text": "hello"}


async def _stream(w: World) -> tuple[str, Any]:
    return f"/v1/rooms/{await w.room()}/messages/stream", None


async def _dismiss(w: World) -> tuple[str, Any]:
    """Ada's text that her line's carrier could not deliver."""
    await w.no_line()
    line, room, sent = await sent_by_line(w.api, w.operator, w.people)
    carrier_id = sent["delivery"]["carrier_id"]
    failed = await status(w.api, line, carrier_id, "undelivered", ErrorCode="30003")
    assert failed.status == 200, await failed.text()
    return f"/v1/rooms/{room['id']}/messages/{sent['seq']}/dismiss", {}


async def _ask_question(w: World) -> tuple[str, Any]:
    room = await w.room("cy")
    body = {"text": "lunch?", "to": f"{w.org}/cy", "options": ["yes", "no"]}
    return f"/v1/rooms/{room}/questions", body


async def _answer_question(w: World) -> tuple[str, Any]:
    room, seq = await w.question()
    return f"/v1/rooms/{room}/questions/{seq}/answer", {"choice": {"type": "pick", "option": 0}}


async def _drafts(w: World) -> tuple[str, Any]:
    room, _ = await w.drafted()
    return f"/v1/rooms/{room}/drafts", None


async def _send_draft(w: World) -> tuple[str, Any]:
    room, draft = await w.drafted()
    return f"/v1/rooms/{room}/drafts/{draft}/send", {}


async def _discard_draft(w: World) -> tuple[str, Any]:
    room, draft = await w.drafted()
    return f"/v1/rooms/{room}/drafts/{draft}/discard", {}


async def _verify_line(w: World) -> tuple[str, Any]:
    line = await w.line(proven=False)
    code = await code_sent(w.operator, "sms", w.org, line["address"])
    return "/v1/lines/sms/verify", {"code": code}


async def _disconnect_line(w: World) -> tuple[str, Any]:
    await w.line(proven=True)
    return "/v1/lines/sms", None


async def _window(w: World, act: str, body: Any) -> tuple[str, Any]:
    await w.ok("PUT", "/v1/ladder/window", w.who("ada"), {"window": "1h"})
    window = await w.replied("send", "windows")
    return f"/v1/windows/{window}/{act}", body


async def _edit(w: World) -> tuple[str, Any]:
    return await _window(w, "edit", {"text": "mine"})


async def _replace(w: World) -> tuple[str, Any]:
    return await _window(w, "replace", {"text": "mine"})


async def _stop(w: World) -> tuple[str, Any]:
    return await _window(w, "stop", {})


async def _confirmation(w: World) -> tuple[str, Any]:
    confirmation = await w.replied("confirm", "confirmations")
    return f"/v1/confirmations/{confirmation}", {"choice": {"type": "decline"}}


async def _uninstall(w: World) -> tuple[str, Any]:
    manifest = weather(publisher="acme", id_=f"w{secrets.token_hex(4)}")
    body = {"manifest": manifest, "digest": manifest["build"]["digest"],
            "permissions": manifest["permissions"]}  # fmt: skip
    await w.ok("POST", "/v1/mod/installs", w.who("ada"), body)
    return f"/v1/mod/installs/acme/{manifest['id']}", None


async def _layer(w: World) -> tuple[str, Any]:
    await w.layer()
    return "/v1/mod/layers/user", None


async def _write_layer(w: World) -> tuple[str, Any]:
    op = {"op": "hide", "kind": "apps", "id": "hanzo/board/board"}
    return "/v1/mod/layers/user", {"base": await w.layer(), "ops": [op]}


async def _versions(w: World) -> tuple[str, Any]:
    await w.layer()
    return "/v1/mod/layers/user/versions", None


async def _revert(w: World) -> tuple[str, Any]:
    return "/v1/mod/layers/user/revert", {"base": await w.layer(), "version": 0}


async def _mod_draft(w: World) -> tuple[str, Any]:
    return f"/v1/mod/drafts/{await w.mod_draft()}", None


async def _shown_over(w: World) -> tuple[str, Any]:
    return f"/v1/mod/drafts/{await w.mod_draft()}/composed", None


async def _keep(w: World) -> tuple[str, Any]:
    return f"/v1/mod/drafts/{await w.mod_draft()}/commit", {}


async def _run(w: World) -> tuple[str, Any]:
    return f"/v1/chonk/runs/{(await w.run())['id']}", None


async def _cadence(w: World) -> tuple[str, Any]:
    return f"/v1/chonk/cadences/{await w.cadence()}", None


async def _org_agent(w: World) -> tuple[str, Any]:
    """One of the org's own agents, made by its admin (made again once removed)."""
    await set_plan(w.operator, w.org, "pro")
    root = bearer(token(org=w.org, user=f"{w.org}/root", roles=("admin",)))
    made = await w.api.post("/v1/agents", json={"persona": "cto"}, headers=root)
    assert made.status in (201, 409), await made.text()
    return f"/v1/agents/agent:{w.org}:cto/remove", {}


async def _packet(w: World) -> tuple[str, Any]:
    priya = bearer(token(org=SIM, user=f"{SIM}/priya", roles=("admin",)))
    run = await w.ok("POST", "/v1/chonk/runs", priya, {"tenant": SIM, "run": "packet_lena"})
    return f"/v1/chonk/packets/{run['delivered'][0]['packet']}/decided", {}


async def _fact(w: World) -> tuple[str, Any]:
    report = await w.run()
    return f"/v1/chonk/memory/{report['memory'][0]}", {"response": ""}


# (method, path) → the row. Statuses in the order of CALLERS:
#       owner, member, admin, stranger, own agent, another's agent.
ROWS: dict[tuple[str, str], Row] = {
    ("GET", "/v1/poa/grants/{id}"): row(_grant, 200, 404, 404, 404, 200, 404),
    ("POST", "/v1/poa/grants/{id}/revoke"): row(_revoke, 200, 404, 404, 404, 200, 404),
    # Only a grant's delegate hands it on: its owner is told so.
    ("POST", "/v1/poa/grants/{id}/children"): row(_children, 403, 404, 404, 404, 201, 404),
    ("POST", "/v1/poa/grants/{id}/acts"): row(_act, 403, 404, 404, 404, 200, 404),
    ("GET", "/v1/poa/asks/{id}"): row(_ask, 200, 404, 404, 404, 200, 404),
    ("POST", "/v1/poa/asks/{id}/answer"): row(_answer_ask, 200, 404, 404, 404, 403, 403),
    ("GET", "/v1/rooms/{id}"): row(_room, 200, 404, 404, 404, 200, 404),
    ("GET", "/v1/rooms/{id}/messages"): row(_messages, 200, 404, 404, 404, 200, 404),
    # A person's agent posts nothing itself: its reply is its person's ladder's (§4).
    ("POST", "/v1/rooms/{id}/messages"): row(_send, 201, 404, 404, 404, 403, 404),
    ("GET", "/v1/rooms/{id}/messages/stream"): row(_stream, 200, 404, 404, 404, 200, 404),
    ("POST", "/v1/rooms/{id}/messages/{seq}/dismiss"): row(
        _dismiss, 200, 404, 404, 404, 403, 403, shared=True
    ),
    ("POST", "/v1/rooms/{id}/questions"): row(_ask_question, 201, 404, 404, 404, 403, 404),
    ("POST", "/v1/rooms/{id}/questions/{seq}/answer"): row(
        _answer_question, 201, 404, 404, 404, 403, 404
    ),
    ("GET", "/v1/rooms/{id}/drafts"): row(_drafts, 200, 404, 404, 404, 200, 404),
    ("POST", "/v1/rooms/{id}/drafts/{draft}/send"): row(_send_draft, 201, 404, 404, 404, 403, 404),
    ("POST", "/v1/rooms/{id}/drafts/{draft}/discard"): row(
        _discard_draft, 200, 404, 404, 404, 403, 404
    ),
    # A person's line is addressed by its transport: each caller reaches only their own.
    ("POST", "/v1/lines/{transport}/verify"): row(
        _verify_line, 200, 404, 404, 404, 403, 403, shared=True
    ),
    ("DELETE", "/v1/lines/{transport}"): row(
        _disconnect_line, 200, 404, 404, 404, 403, 403, shared=True
    ),
    # What a window or a confirmation holds, only its person changes; an agent is refused
    # whichever it names.
    ("POST", "/v1/windows/{id}/edit"): row(_edit, 201, 404, 404, 404, 403, 403),
    ("POST", "/v1/windows/{id}/replace"): row(_replace, 201, 404, 404, 404, 403, 403),
    ("POST", "/v1/windows/{id}/stop"): row(_stop, 200, 404, 404, 404, 403, 403),
    ("POST", "/v1/confirmations/{id}"): row(_confirmation, 200, 404, 404, 404, 403, 403),
    # Installs and layers are the caller's own (`user`): nobody names another's, and each
    # caller's answer is of their own (a write at Ada's version finds theirs elsewhere).
    ("DELETE", "/v1/mod/installs/{publisher}/{id}"): row(_uninstall, 200, 404, 404, 404, 403, 403),
    ("GET", "/v1/mod/layers/{layer}"): row(_layer, 200, 200, 200, 200, 200, 200),
    ("POST", "/v1/mod/layers/{layer}"): row(_write_layer, 200, 409, 409, 409, 202, 202),
    ("GET", "/v1/mod/layers/{layer}/versions"): row(_versions, 200, 200, 200, 200, 200, 200),
    ("POST", "/v1/mod/layers/{layer}/revert"): row(_revert, 200, 409, 409, 409, 403, 403),
    # A read of a draft, one draft each caller asks of: a layer holds 16 open drafts.
    ("GET", "/v1/mod/drafts/{id}"): row(_mod_draft, 200, 404, 404, 404, 200, 404, shared=True),
    ("GET", "/v1/mod/drafts/{id}/composed"): row(
        _shown_over, 200, 404, 404, 404, 200, 404, shared=True
    ),
    ("POST", "/v1/mod/drafts/{id}/commit"): row(_keep, 200, 404, 404, 404, 403, 404),
    ("DELETE", "/v1/mod/drafts/{id}"): row(_mod_draft, 204, 404, 404, 404, 204, 404),
    # The Chonks' tenant: a run is its admins' to read; a fact about Ana, Ana's to answer.
    ("GET", "/v1/chonk/runs/{id}"): row(_run, 404, 404, 200, 404, 404, 404, owned_by="ana"),
    ("POST", "/v1/chonk/memory/{id}"): row(_fact, 200, 404, 404, 404, 403, 403, owned_by="ana"),
    # A packet is its decider's alone (Priya decides Lena's): another admin of the org, or
    # the person it is about, finds none.
    ("POST", "/v1/chonk/packets/{id}/decided"): row(
        _packet, 200, 404, 404, 404, 403, 403, owned_by="priya"
    ),
    # The org's own agents are its admins' alone to remove.
    ("POST", "/v1/agents/{id}/remove"): row(_org_agent, 403, 403, 200, 403, 403, 403),
    # A cadence is its tenant's, started and stopped by its admins alone.
    ("DELETE", "/v1/chonk/cadences/{cadence}"): row(
        _cadence, 403, 403, 200, 403, 403, 403, owned_by="ana"
    ),
}
# Carriers' webhooks name a transport, not a person's resource: each proves itself by
# the line's signature (tests/personal/test_hip0524_09_personal_line.py), with no token.
NOT_A_PERSONS = {(r.method, r.path) for r in ROUTES if r.kind == "webhook"}


def test_every_resource_route_has_its_row():
    named = {(r.method, r.path) for r in ROUTES if r.path_params}
    assert named - NOT_A_PERSONS - set(ROWS) == set(), "a route without its row in the matrix"
    assert set(ROWS) - named == set(), "a row for a route that is gone"


async def test_the_matrix(api, people, operator):
    world = World(api, people, operator, secret=f"secret-{secrets.token_hex(6)}")
    org = people.org
    await announce(operator, f"{org}/ada", f"{org}/bob", f"{org}/cy")
    seen: dict[tuple[str, str], dict[str, int]] = {}
    leaks = []
    for (method, path), r in ROWS.items():
        seen[(method, path)] = {}
        shared = await r.make(world) if r.shared else None
        for caller in (*CALLERS[1:], "owner") if r.shared else CALLERS:
            url, body = shared or await r.make(world)
            member = "ben" if r.owned_by in ("ana", "priya") else "bob"
            headers = world.caller(caller, owner=r.owned_by, member=member)
            response = await api.request(method, url, json=body, headers=headers)
            text = await response.text() if response.content_type != "text/event-stream" else ""
            response.close()
            seen[(method, path)][caller] = response.status
            if caller not in ("owner", "own_agent") and world.secret in text:
                leaks.append((method, path, caller))
    wrong = {
        route: {c: (seen[route][c], ROWS[route].cells[c]) for c in CALLERS
                if seen[route][c] != ROWS[route].cells[c]}
        for route in ROWS
    }  # fmt: skip
    assert {route: cells for route, cells in wrong.items() if cells} == {}, "(seen, expected)"
    assert leaks == []
