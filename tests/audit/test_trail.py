"""The audit trail through the audit service: concurrent writers, failures, forgeries, and
the verify command."""

import asyncio
import contextlib
import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from libs.audit.chain import breaks
from libs.audit.reading import records, stored
from libs.audit.trail import AuditUnavailable, Trail
from libs.contracts import audit
from libs.contracts.audit import APPEND, Append
from libs.contracts.principal import BEFORE_HEADER, Principal
from libs.contracts.problem import PROBLEM_HEADER
from libs.contracts.streams import audit_subject
from services.audit.main import serve as serve_audit
from tests.support import frozen, module_process, serving

ADA = Principal(org="acme", sub="acme/ada")
CREATE_ROOM = "rooms.room.create"


@pytest.fixture
async def trail(connect, audit_service):
    async with connect("echo") as nc:
        yield Trail(nc, service="echo")


async def test_concurrent_writers_never_fork_an_orgs_chain(trail, operator, org):
    async def writer(w: int) -> None:
        for i in range(20):
            await trail.append(org, actor=ADA, action="test.write", data={"w": w, "i": i})

    await asyncio.gather(*(writer(w) for w in range(8)))
    chain = [m async for m in stored(operator.jetstream(), org)]
    assert [r.n for r in await records(operator.jetstream(), org)] == list(range(1, 161))
    assert breaks(chain, org=org) == (160, [])


async def test_each_org_has_its_own_chain(trail, operator, org):
    other = f"{org}-b"
    await trail.append(org, actor=ADA, action="a")
    await trail.append(other, actor=ADA, action="b")
    mine = await records(operator.jetstream(), org)
    theirs = await records(operator.jetstream(), other)
    assert ([r.n for r in mine], [r.n for r in theirs]) == ([1], [1])


async def test_the_record_names_the_service_the_bus_proved_not_one_it_claims(trail, operator, org):
    record = await trail.append(org, actor=ADA, action="a")
    assert record.service == "echo"
    assert (await records(operator.jetstream(), org))[0].service == "echo"


async def test_a_change_is_recorded_before_it_happens(trail, operator, org):
    async with trail.change(org, actor=ADA, action="grant.issue", target="g1") as record:
        seen = await records(operator.jetstream(), org)
    assert seen == [record]
    assert (record.action, record.target, record.actor) == ("grant.issue", "g1", ADA)


async def test_a_failed_change_is_followed_by_a_failed_record(trail, operator, org):
    with pytest.raises(RuntimeError):
        async with trail.change(org, actor=ADA, action="grant.issue", target="g1"):
            raise RuntimeError("the store said no")
    found = await records(operator.jetstream(), org)
    assert [(r.action, r.data) for r in found] == [
        ("grant.issue", {}),
        ("grant.issue.failed", {"record": 1, "error": "RuntimeError"}),
    ]


async def test_a_keyed_change_asked_again_is_recorded_once_and_again_after_it_failed(
    trail, operator, org
):
    """A keyed change's record is written once however often the change is asked (its
    request delivered again). But a try that failed is followed by its failed record, so
    the try after it is a change of its own, recorded before it happens: under the first
    record alone, the trail would say the change failed when the retry made it."""
    tries = iter((RuntimeError("the rooms are away"), None, None))

    async def once() -> None:
        async with trail.change(org, actor=ADA, action="reply.send", key=f"send.{org}"):
            if (failure := next(tries)) is not None:
                raise failure

    with pytest.raises(RuntimeError):
        await once()
    await once()  # the retry, made
    await once()  # and its request delivered again
    found = await records(operator.jetstream(), org)
    assert [(r.n, r.action, r.data) for r in found] == [
        (1, "reply.send", {}),
        (2, "reply.send.failed", {"record": 1, "error": "RuntimeError"}),
        (3, "reply.send", {}),
    ]


async def test_two_services_keys_never_meet(trail, connect, operator, org):
    """Each caller's keys are its own: another service's record under the same key is
    recorded, not refused as a key used again, and its failure forgets only its own."""
    key = f"shared.{org}"
    async with connect("rooms") as nc:
        rooms = Trail(nc, service="rooms")
        mine = await trail.append(org, actor=ADA, action="echo.say", key=key)
        theirs = await rooms.append(org, actor=ADA, action="rooms.post", key=key)
        with pytest.raises(RuntimeError):
            async with rooms.change(org, actor=ADA, action="rooms.post", key=key):
                raise RuntimeError("the bus is away")
    again = await trail.append(org, actor=ADA, action="echo.say", key=key)
    assert again == mine  # answered as it was: the rooms' failure forgot nothing of echo's
    found = await records(operator.jetstream(), org)
    assert [(r.service, r.action) for r in found] == [
        ("echo", "echo.say"),
        ("rooms", "rooms.post"),
        ("rooms", "rooms.post.failed"),
    ]
    assert theirs.n == 2


async def test_a_change_whose_record_cannot_be_written_does_not_happen(connect, org, audit_service):
    async with connect("echo") as nc:
        trail = Trail(nc, service="echo")
    happened = []
    with pytest.raises(AuditUnavailable):  # the connection is closed: nothing can be recorded
        async with trail.change(org, actor=ADA, action="grant.issue"):
            happened.append(True)
    assert happened == []


async def test_a_record_stored_after_its_caller_gave_up_never_names_the_change_as_made(
    connect, stack, operator, org
):
    """The audit stalled (stopped here, as a long pause or a slow stream leaves it) while a
    change waited for its record: the caller gave up and made no change, and the record
    was stored when the audit went on. The trail named a room created that never was."""
    env = stack.env(
        NATS_USER="audit", NATS_PASSWORD=stack.passwords["audit"], TETHER_METRICS_PORT="0"
    )
    async with module_process("services.audit.main", env) as audit, connect("echo") as nc:
        trail = Trail(nc, service="echo", timeout=2.0)
        async with asyncio.timeout(30):  # the audit replica up and answering
            while True:
                with contextlib.suppress(AuditUnavailable):
                    await trail.append(org, actor=ADA, action="test.before")
                    break
                await asyncio.sleep(0.1)
        happened = []
        with frozen(audit.pid), pytest.raises(AuditUnavailable):
            async with trail.change(org, actor=ADA, action="rooms.room.create", target="r-1"):
                happened.append(True)
        # Taken after the stalled one, under the org's lock: once it is stored, so is that.
        await trail.append(org, actor=ADA, action="test.after")
        await trail.settle()  # its caller's asking again, told nothing the first time
    actions = [r.action for r in await records(operator.jetstream(), org)]
    assert happened == []
    marked = ["rooms.room.create", "rooms.room.create.abandoned"]
    assert actions in (
        ["test.before", *marked, "test.after"],  # stored as the audit went on
        ["test.before", "test.after", *marked],  # refused then, stored as asked again
    ), actions


@pytest.mark.parametrize(
    ("before", "stored"),
    [("2020-01-01T00:00:00+00:00", False), ("2020-01-01T00:00:00", True), ("soon", True)],
    ids=["past", "no-offset", "no-instant"],
)
async def test_a_record_asked_past_its_callers_wait_is_not_stored(
    connect, audit_service, operator, org, before, stored
):
    """Only an instant with its offset is a wait; anything else is a request as any other.
    One past is refused as every service refuses a request its caller stopped waiting for."""
    request = msgspec.json.encode(Append(org=org, actor=ADA, action="test.late"))
    async with connect("echo") as nc:
        answer = await nc.request(
            APPEND.published_by("echo"), request, timeout=10, headers={BEFORE_HEADER: before}
        )
    status = int((answer.headers or {}).get(PROBLEM_HEADER, 0))
    assert (status == 0) is stored, answer.data
    if not stored:
        assert (status, msgspec.json.decode(answer.data)["type"]) == (
            503, "urn:tether:problem:request-late"
        )  # fmt: skip
    assert len(await records(operator.jetstream(), org)) == (1 if stored else 0)


async def test_a_record_asked_again_as_abandoned_is_stored_and_marked_once(trail, operator, org):
    """Asked again after its first asking was stored (found under the change's id), or
    before it ever was (stored then): either way once, and marked once."""
    stored_first = "0" * 31 + "1"
    await trail.append(org, actor=ADA, action=CREATE_ROOM, target="r1", change_id=stored_first)
    for _ in range(2):
        await trail.append(
            org, actor=ADA, action=CREATE_ROOM, target="r1", change_id=stored_first, abandoned=True
        )
    never_stored = "0" * 31 + "2"
    for _ in range(2):
        await trail.append(
            org, actor=ADA, action=CREATE_ROOM, target="r2", change_id=never_stored, abandoned=True
        )
    found = await records(operator.jetstream(), org)
    assert [(r.n, r.action, r.target, r.data) for r in found] == [
        (1, CREATE_ROOM, "r1", {}),
        (2, f"{CREATE_ROOM}.abandoned", "r1", {"record": 1}),
        (3, CREATE_ROOM, "r2", {}),
        (4, f"{CREATE_ROOM}.abandoned", "r2", {"record": 3}),
    ]


async def test_no_service_credential_can_publish_onto_an_orgs_chain(connect, trail, operator, org):
    """Only the audit service's credential may publish to the AUDIT stream (issue 10.2)."""
    refused: list[str] = []
    for role in ("echo", "poa", "rooms", "ladder", "agents", "scheduler", "gateway"):
        said = asyncio.Event()

        async def on_error(exc: Exception, said: asyncio.Event = said) -> None:
            refused.append(str(exc).lower())
            said.set()

        async with connect(role, error_cb=on_error) as nc:
            await nc.publish(audit_subject(org), b'{"forged": true}')
            await asyncio.wait_for(said.wait(), 5)  # the server's answer, not a sleep
    record = await trail.append(org, actor=ADA, action="after the attempts")
    chain = [m async for m in stored(operator.jetstream(), org)]
    assert len(chain) == 1 and record.n == 1
    assert sum("permissions violation" in e for e in refused) == 7


def _verify(stack, org: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "audit", "verify", "--org", org],
        env=stack.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_a_stored_message_that_is_not_a_record_blocks_no_write_and_verify_names_it(
    trail, stack, operator, org
):
    """Whatever lands on an org's subject (here published by the operator, the one other
    credential that can), writing goes on and `tether audit verify` names it by sequence."""
    for i in range(3):
        await trail.append(org, actor=ADA, action="step", data={"i": i})
    intact = await asyncio.to_thread(_verify, stack, org)
    ack = await operator.jetstream().publish(audit_subject(org), b'{"forged": true}')
    async with trail.change(org, actor=ADA, action="goes on") as after:
        pass
    broken = await asyncio.to_thread(_verify, stack, org)
    assert (intact.returncode, intact.stdout) == (0, f"{org}: 3 records, chain intact\n")
    assert after.n == 4
    assert broken.returncode == 1
    lines = broken.stdout.splitlines()
    assert lines[0].startswith(f"{org}: sequence {ack.seq} breaks the chain: not an audit record")
    assert lines[1:] == [f"{org}: 4 valid records, 1 not"]


async def test_verify_of_an_org_with_no_records_says_so_not_intact(trail, stack, org):
    """An org with no records was said to be "0 records, chain intact": a name mistyped
    read as an org whose trail was checked."""
    await trail.append("acme", actor=ADA, action="step")
    none = await asyncio.to_thread(_verify, stack, org)
    assert (none.returncode, none.stdout) == (0, f"{org}: no records\n"), none.stderr


@pytest.mark.parametrize("org", [">", "*", "acme.ada", "Acme"])
async def test_verify_refuses_what_is_no_org_rather_than_read_other_orgs(trail, stack, org):
    # `>` and `*` are subject wildcards: the chain of every org, read as one and broken.
    await trail.append("acme", actor=ADA, action="step")
    refused = await asyncio.to_thread(_verify, stack, org)
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"argument --org: {org!r} is not an org id" in refused.stderr


async def test_a_failure_the_bus_kept_from_the_trail_is_recorded_once_it_is_back(
    tmp_path, org, caplog
):
    """A change recorded, then failed because the bus went away: its `.failed` record
    cannot be written either. Before, that was logged and dropped, and the chain went on
    claiming a change that never happened. Now it is asked again, and lands once."""
    from libs.contracts.audit import CONTRACT as AUDIT
    from libs.runtime import bus as runtime_bus
    from libs.runtime.settings import Settings
    from services.audit.main import serve as serve_audit
    from tests.personal.conftest import eventually
    from tests.support import Bus, serving

    caplog.set_level(logging.INFO, logger=Trail.__module__)
    server = Bus(tmp_path)
    settings = Settings(service="audit", nats_url=server.url, metrics_port=0)
    try:
        async with serving(AUDIT, settings, serve_audit) as audit:
            nc, first = await runtime_bus.connecting(
                server.url, user="", password="", name="writer"
            )
            await first
            trail = Trail(nc, service="echo", timeout=1.0)
            with pytest.raises(runtime_bus.NotSent):
                async with trail.change(org, actor=ADA, action="test.change"):
                    await server.stop()
                    await eventually(lambda: asyncio.sleep(0, not nc.is_connected))
                    raise runtime_bus.NotSent("the change's own write, as it would be")

            await server.start()

            async def recorded_late() -> bool:  # the one sign its asking is over
                return any("recorded late" in r.getMessage() for r in caplog.records)

            await eventually(recorded_late, timeout=30)
            change, failed = await records(audit.nc.jetstream(), org)
            assert (change.action, failed.action) == ("test.change", "test.change.failed")
            assert failed.data == {"record": change.n, "error": "NotSent"}
            await nc.close()
    finally:
        await server.stop()


@pytest.mark.parametrize("back", [True, False], ids=["audit-back", "audit-still-away"])
async def test_a_failure_unrecorded_when_its_service_stops_is_asked_once_more(
    connect, operator, settings_for, org, caplog, back
):
    """A change failed while no audit replica answered, so its `.failed` record waits to be
    asked again. Its service stops before the next try: the stop asks once more (`settle`),
    and the record lands if the audit service is back, or is named as unrecorded if not.
    Before, a stop between two tries dropped it, the trail claiming the change."""
    from libs.contracts.audit import CONTRACT as AUDIT
    from services.audit.main import serve as serve_audit
    from tests.support import serving

    caplog.set_level(logging.INFO, logger=Trail.__module__)
    async with connect("echo") as nc:
        trail = Trail(nc, service="echo", timeout=1.0)
        async with contextlib.AsyncExitStack() as audit:
            await audit.enter_async_context(serving(AUDIT, settings_for("audit"), serve_audit))
            with pytest.raises(RuntimeError):
                async with trail.change(org, actor=ADA, action="test.change") as record:
                    await audit.aclose()
                    raise RuntimeError("the change failed")
        if back:
            async with serving(AUDIT, settings_for("audit"), serve_audit):
                await trail.settle()
        else:
            await trail.settle()

    kept = [(r.action, r.data) for r in await records(operator.jetstream(), org)]
    failure = ("test.change.failed", {"record": record.n, "error": "RuntimeError"})
    assert kept == ([("test.change", {}), failure] if back else [("test.change", {})])
    unrecorded = f"could not record failure of audit record {org}/{record.n}"
    assert any(r.getMessage() == unrecorded for r in caplog.records) is not back


async def test_a_failed_record_asked_past_its_callers_wait_is_stored_and_never_abandoned(
    connect, settings_for, operator, org
):
    """A record that a change failed names no change to be made: stored late, it is as
    true. Before, the audit refused it, or, stored as the wait ran out, marked it
    abandoned and stored it again when asked again: the trail could read `X`, `X.failed`,
    `X.failed.abandoned`, `X.failed`. The audit here runs an hour ahead of its callers, so
    every record reaches it past its caller's wait."""

    def ahead() -> datetime:
        return datetime.now(UTC) + timedelta(hours=1)

    failed = {"record": 7, "error": "RuntimeError"}
    async with (
        serving(audit.CONTRACT, settings_for("audit"), lambda svc: serve_audit(svc, ahead)),
        connect("echo") as nc,
    ):
        trail = Trail(nc, service="echo")
        with pytest.raises(AuditUnavailable):  # a change's record, past its wait: refused
            await trail.append(org, actor=ADA, action=CREATE_ROOM)
        for _ in range(2):  # asked again, as a caller that never heard back asks
            await trail.append(
                org, actor=ADA, action=f"{CREATE_ROOM}.failed", data=failed,
                key=f"failed.{org}.7", change_id="ab" * 16, failure_of=7,
            )  # fmt: skip
    found = await records(operator.jetstream(), org)
    assert [(r.action, r.data) for r in found] == [(f"{CREATE_ROOM}.failed", failed)]


async def test_a_change_named_as_a_failure_is_held_to_its_callers_wait(
    connect, settings_for, operator, org
):
    """Only what says it is the record that a change failed (`failure_of`) is stored late.
    Before, the audit read it from the action's name, and stored past its caller's wait
    the ladder's record before it marks a window failed: the ladder, told 503, left the
    window as it was, and the trail said it failed. The audit here runs an hour ahead."""

    def ahead() -> datetime:
        return datetime.now(UTC) + timedelta(hours=1)

    async with (
        serving(audit.CONTRACT, settings_for("audit"), lambda svc: serve_audit(svc, ahead)),
        connect("echo") as nc,
    ):
        trail = Trail(nc, service="echo")
        with pytest.raises(AuditUnavailable):
            async with trail.change(org, actor=ADA, action="ladder.window.failed"):
                pytest.fail("a change whose record came past its wait was made")
    assert await records(operator.jetstream(), org) == []
