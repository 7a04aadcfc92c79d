"""Issue 16: every decoder at the bus edge, fuzzed through the running services.

Each subject of every service is sent arbitrary bytes, arbitrary JSON, and values of its
request type at their bounds (tests/contracts/values.py, read from `msgspec.inspect`: the
shortest and longest strings, the least and greatest numbers, the emptiest and fullest
lists). Each
reply must be the subject's reply type or a typed problem, never a 500; after a refusal,
nothing stored on the bus has changed (but the audit record of a write that lost its
compare-and-set, which the spec asks for). The principal header is fuzzed the same way, and
garbage on every event and timer a service reads is dropped without stopping it.
"""

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator

import hypothesis.strategies as st
import msgspec
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings

from libs.contracts import (
    EXTERNAL_EVENTS,
    SERVICES,
    audit,
    chonk,
    ladder,
    mod,
    poa,
    rooms,
    scheduler,
)
from libs.contracts import agents as agents_contract
from libs.contracts.principal import PRINCIPAL_HEADER, Principal
from libs.contracts.problem import PROBLEM_HEADER, Problem
from libs.contracts.registry import ANY_SERVICE, TIMER_OWNERS, Subject
from libs.contracts.streams import AUDIT, EVENTS, TIMERS
from services.agents.main import serve as serve_agents
from services.audit.main import serve as serve_audit
from services.chonk.main import serve as serve_chonk
from services.ladder.main import serve as serve_ladder
from services.mod.main import serve as serve_mod
from services.poa.main import serve as serve_poa
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from services.scheduler.main import serve as serve_scheduler
from tests.contracts.values import values_of
from tests.personal.conftest import Recorder
from tests.support import LINES_KEY, TEST_SERVICES, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")

ORG = f"fuzz-{uuid.uuid4().hex[:8]}"
PRINCIPAL = msgspec.json.encode(Principal(org=ORG, sub=f"{ORG}/ada")).decode()
SUBJECTS = [s for c in SERVICES for s in (*c.subjects, c.health)]
FUZZ = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def caller_of(subject: Subject) -> str:
    """A role allowed to publish `subject`: the gateway where it may, else a service."""
    callers = sorted(subject.callers - {"operator"}) or ["operator"]
    return {ANY_SERVICE: "chonk", TIMER_OWNERS: "ladder"}.get(callers[0], callers[0])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(settings_for) -> AsyncIterator[None]:
    """Every service, one replica each, in this module's loop."""
    timers = {s.name: s.timer_targets for s in (*SERVICES, *TEST_SERVICES) if s.timer_targets}
    sealer = Sealer.from_hex(LINES_KEY)
    served = [
        (audit.CONTRACT, serve_audit),
        (scheduler.CONTRACT, lambda svc: serve_scheduler(svc, timers)),
        (poa.CONTRACT, serve_poa),
        (agents_contract.CONTRACT, lambda svc: serve_agents(svc, Recorder())),
        (rooms.CONTRACT, lambda svc: serve_rooms(svc, sealer)),
        (ladder.CONTRACT, serve_ladder),
        (mod.CONTRACT, lambda svc: serve_mod(svc, review="manifest")),
        (chonk.CONTRACT, serve_chonk),
    ]
    async with contextlib.AsyncExitStack() as stack:
        for contract, serve in served:
            await stack.enter_async_context(serving(contract, settings_for(contract.name), serve))
        yield


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bus(connect, system) -> AsyncIterator[dict]:
    """A connection per caller role, and the operator's JetStream to read the state by."""
    async with contextlib.AsyncExitStack() as stack:
        roles = {caller_of(s) for s in SUBJECTS} | {"operator"}
        yield {role: await stack.enter_async_context(connect(role)) for role in roles}


# A write that lost its compare-and-set is refused and recorded as tried and failed
# (hip-0528 §9.3 rule 5, §9.6; a grant or a line made at once by another): only the
# audit trail may change with it.
RECORDED = {"layer-moved", "grant-exists", "address-taken"}


def stored_by(subject: Subject, refusal: Problem | None = None) -> tuple[str, ...]:
    """The streams a request to `subject` could write: its service's own streams and
    buckets, the events, and the audit trail unless `refusal` is one the trail records."""
    contract = next(c for c in SERVICES if c.name == subject.service)
    own = (*(s.name for s in contract.streams), *(f"KV_{b}" for b in contract.buckets))
    recorded = refusal is not None and refusal.rule in RECORDED
    return (*own, EVENTS.name, *(() if recorded else (AUDIT.name,)))


async def state(bus: dict, streams: tuple[str, ...]) -> dict[str, int]:
    js = bus["operator"].jetstream()
    found = await asyncio.gather(*map(js.stream_info, streams))
    return {name: info.state.last_seq for name, info in zip(streams, found, strict=True)}


async def settled(bus: dict, streams: tuple[str, ...]) -> dict[str, int]:
    """The state once what an earlier request or a timer set going has landed."""
    before = await state(bus, streams)
    while True:
        await asyncio.sleep(0.2)
        now = await state(bus, streams)
        if now == before:
            return now
        before = now


async def ask(bus: dict, subject: Subject, body: bytes, principal: str) -> Problem | None:
    """`body` on `subject`: its reply type (None) or a typed problem, never a 500."""
    headers = {} if subject.public else {PRINCIPAL_HEADER: principal}
    role = caller_of(subject)
    reply = await bus[role].request(subject.published_by(role), body, headers=headers, timeout=10)
    if PROBLEM_HEADER not in (reply.headers or {}):
        msgspec.json.decode(reply.data, type=subject.reply)
        return None
    problem = msgspec.json.decode(reply.data, type=Problem)
    assert problem.status == int(reply.headers[PROBLEM_HEADER])
    assert 400 <= problem.status < 500, (subject.name, body[:200], problem)
    assert problem.detail, problem
    return problem


async def send(bus: dict, subject: Subject, body: bytes, principal: str = PRINCIPAL) -> None:
    """`body` answered as `ask` says, and a refusal changes nothing stored."""
    before = await state(bus, stored_by(subject))
    refusal = await ask(bus, subject, body, principal)
    if refusal is None:
        return
    streams = stored_by(subject, refusal)
    if await state(bus, streams) == {s: before[s] for s in streams}:
        return
    # Something else wrote meanwhile (a timer, an earlier request's event): once it has
    # landed, the same refusal again must change nothing. A timer can land in that moment
    # too (the scheduler's probes keep firing), so it is asked up to three times: a refusal
    # that stores something changes the state every time.
    for _ in range(3):
        before = await settled(bus, streams)
        assert await ask(bus, subject, body, principal) is not None
        if await state(bus, streams) == before:
            return
    raise AssertionError(f"{subject.name} refused {body[:200]!r} yet stored")


@pytest.mark.parametrize("subject", SUBJECTS, ids=lambda s: s.name)
@FUZZ
@given(body=st.binary(max_size=256))
async def test_arbitrary_bytes(bus, subject, body):
    await send(bus, subject, body)


@pytest.mark.parametrize("subject", SUBJECTS, ids=lambda s: s.name)
@FUZZ
@given(value=json_values)
async def test_arbitrary_json(bus, subject, value):
    await send(bus, subject, msgspec.json.encode(value))


@pytest.mark.parametrize("subject", SUBJECTS, ids=lambda s: s.name)
@FUZZ
@given(data=st.data())
async def test_values_of_the_request_type_at_their_bounds(bus, subject, data):
    value = data.draw(values_of(subject.request), label="request")
    await send(bus, subject, msgspec.json.encode(value))


@FUZZ
@given(header=st.text(max_size=200) | json_values.map(lambda v: msgspec.json.encode(v).decode()))
async def test_an_arbitrary_principal_is_refused(bus, header):
    subject = rooms.LIST
    await send(bus, subject, b"{}", principal=header)


async def test_garbage_on_every_event_and_timer_a_service_reads_is_dropped(bus):
    """Each event read by a durable consumer, and each timer a service is fired, sent bytes
    that are neither: the consumer drops it (its pending and unacknowledged counts return
    to zero) and the service serves on."""
    js = bus["operator"].jetstream()
    events = [*(e for c in SERVICES for e in c.events), *EXTERNAL_EVENTS]
    read = {(EVENTS.name, r): [e.name for e in events if r in e.readers]
            for r in {r for e in events for r in e.readers}}  # fmt: skip
    # The scheduler's own timers are the probes it fires at start, which nothing reads.
    read |= {(TIMERS.name, c.name): [f"tether.timer.{c.name}.{t}" for t in c.timer_targets]
             for c in SERVICES if c.timer_targets and c.name != "scheduler"}  # fmt: skip
    assert len(read) >= 6, read
    for subjects in read.values():
        for subject in subjects:
            for body in (b"", b"\xff\xfe", b"[]", b'{"unknown": 1}', b"null"):
                await js.publish(subject, body)
    deadline = time.monotonic() + 20
    for stream, durable in read:
        while True:
            info = await js.consumer_info(stream, durable)
            if info.num_pending == 0 and info.num_ack_pending == 0:
                break
            assert time.monotonic() < deadline, (stream, durable, info)
            await asyncio.sleep(0.1)
    for contract in SERVICES:
        reply = await bus["gateway"].request(contract.health.name, b"{}", timeout=5)
        assert PROBLEM_HEADER not in (reply.headers or {}), contract.name
