"""Issue 11.4 and 11.5: one record per change that happened, and every state change of a
service recorded before it happens."""

import asyncio
from pathlib import Path

from libs.audit.reading import records
from services.gateway.routes import ROUTES
from tests.personal.conftest import room_with

WRITERS = 20
SERVICES = Path(__file__).resolve().parents[2] / "services"


async def test_twenty_concurrent_writers_on_one_ladder_leave_one_record_per_change(
    api, people, operator
):
    rooms = [await room_with(api, people, people.bob_id, title=f"r{i}") for i in range(WRITERS)]

    async def write(room: dict) -> int:
        body = {"level": "confirm", "scope": "room", "target": room["id"]}
        return (await api.put("/v1/ladder", json=body, headers=people.ada)).status

    assert await asyncio.gather(*(write(r) for r in rooms)) == [200] * WRITERS
    settings = (await (await api.get("/v1/ladder", headers=people.ada)).json())["settings"]
    assert len(settings["rooms"]) == WRITERS
    found = await records(operator.jetstream(), people.org)
    changes = [r for r in found if r.action.startswith("ladder.level.change")]
    assert [r.action for r in changes] == ["ladder.level.change"] * WRITERS


async def test_a_change_that_changes_nothing_leaves_no_record(api, people, operator):
    for _ in range(3):
        response = await api.put("/v1/ladder", json={"level": "draft"}, headers=people.ada)
        assert response.status == 200
    found = await records(operator.jetstream(), people.org)
    assert [r for r in found if r.action.startswith("ladder.level.change")] == []


# What each writing route records, named by the route: a write route added later without a
# row here fails `test_every_write_route_is_recorded_or_says_why_not`.
RECORDED = {
    ("POST", "/v1/poa/grants"): "poa.grant.issue",
    ("POST", "/v1/poa/grants/{id}/revoke"): "poa.grant.revoke / poa.ask.revoke",
    ("POST", "/v1/poa/grants/{id}/children"): "poa.grant.delegate",
    ("POST", "/v1/poa/grants/{id}/acts"): "poa.act.record / poa.act.decide",
    ("POST", "/v1/poa/asks/{id}/answer"): "poa.ask.answer / poa.act.record",
    ("POST", "/v1/rooms/{id}/messages/{seq}/dismiss"): "rooms.delivery.dismiss",
    ("POST", "/v1/agents/me"): "agents.personal.create",
    ("POST", "/v1/agents/personas"): "agents.persona.put",
    ("POST", "/v1/agents"): "agents.org.create",
    ("PUT", "/v1/preferences"): "agents.preferences.set",
    ("POST", "/v1/rooms"): "rooms.room.create",
    ("POST", "/v1/lines"): "rooms.line.claim",
    ("POST", "/v1/lines/{transport}/verify"): "rooms.line.connect",
    ("DELETE", "/v1/lines/{transport}"): "rooms.line.disconnect",
    ("PUT", "/v1/ladder"): "ladder.level.change",
    ("PUT", "/v1/ladder/window"): "ladder.window.change",
    ("PUT", "/v1/ladder/ceiling"): "ladder.ceiling.set",
    ("POST", "/v1/windows/{id}/edit"): "ladder.window.edited",
    ("POST", "/v1/windows/{id}/replace"): "ladder.window.replaced",
    ("POST", "/v1/windows/{id}/stop"): "ladder.window.stopped",
    ("POST", "/v1/confirmations/{id}"): "ladder.confirmation.answer",
    ("POST", "/v1/rooms/{id}/drafts/{draft}/send"): "rooms.draft.send",
    ("POST", "/v1/rooms/{id}/drafts/{draft}/discard"): "rooms.draft.discard",
    ("POST", "/v1/mod/installs"): "mod.install",
    ("DELETE", "/v1/mod/installs/{publisher}/{id}"): "mod.uninstall",
    ("POST", "/v1/mod/layers/{layer}"): "mod.layer.write / mod.draft.create",
    ("POST", "/v1/mod/layers/{layer}/revert"): "mod.layer.revert",
    ("POST", "/v1/mod/drafts/{id}/commit"): "mod.draft.keep / mod.draft.kept",
    ("DELETE", "/v1/mod/drafts/{id}"): "mod.draft.discard",
    ("POST", "/v1/chonk/runs"): "chonk.run / chonk.memory.read / chonk.memory.write"
    " / chonk.handoff.request / chonk.packet.open / chonk.action.ready",
    ("POST", "/v1/chonk/cadences"): "chonk.cadence.start",
    ("DELETE", "/v1/chonk/cadences/{cadence}"): "chonk.cadence.stop",
    ("POST", "/v1/chonk/messages"): "chonk.cover.start / chonk.handoff.request"
    " / chonk.proposal.approve / chonk.cover.escalate / chonk.claim.disputed / chonk.reply"
    " / chonk.memory.write",
    ("POST", "/v1/chonk/memory/{id}"): "chonk.memory.redact",
    ("POST", "/v1/chonk/packets/{id}/decided"): "chonk.packet.decide",
    ("PUT", "/v1/chonk/voice"): "chonk.voice.set",
    ("POST", "/v1/agents/{id}/remove"): "agents.org.remove",
}
# Writes whose record is the stored thing itself: a room's history is its own append-only
# record (author, kind, on-behalf person, time), kept on the ROOMS stream.
SELF_RECORDING = {
    ("POST", "/v1/rooms/{id}/messages"): "the message, in the room's history",
    ("POST", "/v1/rooms/{id}/questions"): "the question, in the room's history",
    ("POST", "/v1/rooms/{id}/questions/{seq}/answer"): "the answer, in the room's history",
    ("POST", "/v1/lines/{transport}/inbound"): "the message, in the line's room",
    ("POST", "/v1/lines/{transport}/status"): "the carrier's word, on the message it is about",
    ("POST", "/v1/lines/{transport}/call"): "the call, and what the agent said, in the room",
    ("POST", "/v1/lines/{transport}/voicemail"): "the voicemail, in the line's room",
}
READS = {("POST", "/v1/poa/verify"), ("POST", "/v1/poa/contain")}  # judged, nothing stored


def test_every_write_route_is_recorded_or_says_why_not():
    writes = {(r.method, r.path) for r in ROUTES if r.method != "GET"} - READS
    assert writes == RECORDED.keys() | SELF_RECORDING.keys()


def test_every_action_named_is_recorded_by_its_service():
    source: dict[str, str] = {}
    for path in SERVICES.rglob("*.py"):
        service = path.relative_to(SERVICES).parts[0]
        source[service] = source.get(service, "") + path.read_text()
    missing = [
        action
        for actions in RECORDED.values()
        for action in actions.split(" / ")
        if f'"{action}"' not in source[action.split(".")[0]]
    ]
    assert missing == []


# The readers' writes, by the subjects they read: each changes state only through a
# recorded action.
READERS = {
    "tether.timer.ladder.window_end": (
        "ladder.window.send",
        "ladder.window.cancel",
        "ladder.window.replaced",  # by the person's own answer in the room meanwhile
    ),
    "dead letters of tether.timer.ladder.window_end": ("ladder.window.failed",),
    "tether.evt.rooms.answer.stored": ("ladder.confirmation.answer",),
    "tether.evt.accounts.account.created": ("agents.personal.create",),
    "tether.timer.mod.draft_end": ("mod.draft.self_commit", "mod.draft.kept", "mod.draft.wait"),
    "tether.timer.mod.draft_expiry": ("mod.draft.expire",),
    "tether.timer.poa.ask_expiry": ("poa.ask.expire", "poa.act.record"),
    "tether.evt.rooms.answer.stored (poa)": ("poa.ask.answer", "poa.act.record"),
    "tether.timer.chonk.chase": ("chonk.chase.stage", "chonk.chase.end"),
    "tether.timer.chonk.cadence": ("chonk.run", "chonk.memory.read", "chonk.memory.write"),
    "tether.timer.chonk.cover": ("chonk.cover.covered", "chonk.cover.escalate"),
    "tether.evt.chonk.handoff.requested": (
        "chonk.handoff.accept",
        "chonk.handoff.decline",
        "chonk.run",
    ),
    "tether.evt.rooms.answer.stored (chonk)": (
        "chonk.proposal.approve",
        "chonk.proposal.decline",
        "chonk.chase.answer",
        "chonk.cover.taken",
        "chonk.packet.open",
    ),
    # What a person writes in their thread with a Chonk, read as POST /v1/chonk/messages is.
    "tether.evt.rooms.bot_message.stored": (
        "chonk.reply",
        "chonk.claim.disputed",
        "chonk.memory.write",
        "chonk.handoff.request",
        "chonk.cover.start",
    ),
}


def test_every_readers_write_is_a_recorded_action():
    source = "".join(
        p.read_text()
        for s in ("ladder", "agents", "mod", "poa", "chonk")
        for p in (SERVICES / s).rglob("*.py")
    )
    for actions in READERS.values():
        for action in actions:
            assert f'"{action}"' in source, action
