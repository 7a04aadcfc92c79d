"""The service runtime against a real nats-server: queue groups, health, problems, drain."""

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import msgspec
import nats
import pytest

from libs.contracts.health import Health
from libs.contracts.permissions import GATEWAY
from libs.contracts.principal import PRINCIPAL_HEADER, REQUEST_KEY_HEADER, Principal
from libs.contracts.problem import PROBLEM_HEADER, Problem
from libs.runtime import logs
from libs.runtime.calls import call
from libs.runtime.service import Service
from libs.runtime.settings import Settings
from libs.stack.servers import free_port
from tests.personal.conftest import eventually
from tests.support import (
    ECHO,
    SAY,
    Bus,
    Echo,
    Said,
    Say,
    answers,
    encode,
    module_process,
    running,
    stopped_cleanly,
)

ADA = Principal(org="acme", sub="acme/ada")
_HEADERS = {PRINCIPAL_HEADER: encode(ADA).decode()}
_PROJECT = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
RELEASE = _PROJECT["project"]["version"]


def _echo_table(echo: Echo):
    return lambda _svc: {SAY: echo.say}


async def test_two_replicas_share_the_load_and_handle_each_request_once(settings_for, connect):
    one, two = Echo("one"), Echo("two")
    async with (
        running(ECHO, settings_for("echo", "one"), _echo_table(one)),
        running(ECHO, settings_for("echo", "two"), _echo_table(two)),
        connect(GATEWAY) as nc,
    ):
        replies = await asyncio.gather(
            *(
                nc.request(SAY.name, encode(Say(text=str(i))), 5, headers=_HEADERS)
                for i in range(400)
            )
        )
    said = [msgspec.json.decode(r.data, type=Said) for r in replies]
    assert sorted(s.text for s in said) == sorted(str(i) for i in range(400))
    assert len(one.handled) + len(two.handled) == 400
    assert one.handled and two.handled


async def test_two_copies_of_a_keyed_request_at_once_run_once(settings_for, connect):
    """Two paths carrying out one keyed change at the same moment (a question's answer and
    its closing timer, say) reach one replica together: the second waits for the first,
    and is answered with its kept answer instead of running beside it."""
    echo = Echo("one")
    keyed = _HEADERS | {REQUEST_KEY_HEADER: "together-1"}
    request = encode(Say(text="once", delay_ms=200))
    async with running(ECHO, settings_for("echo"), _echo_table(echo)), connect(GATEWAY) as nc:
        replies = await asyncio.gather(
            *(nc.request(SAY.name, request, 5, headers=keyed) for _ in range(2))
        )
    assert [r.data for r in replies] == [replies[0].data] * 2
    assert [s.text for s in echo.handled] == ["once"]


async def test_copies_of_a_keyed_request_at_two_replicas_run_once(settings_for, connect):
    """Copies spread over two replicas by their queue group: whichever claims the key runs
    it, and every other copy, at either replica, is answered with its answer."""
    one, two = Echo("one"), Echo("two")
    keyed = _HEADERS | {REQUEST_KEY_HEADER: "together-2"}
    request = encode(Say(text="once", delay_ms=300))
    async with (
        running(ECHO, settings_for("echo", "one"), _echo_table(one)),
        running(ECHO, settings_for("echo", "two"), _echo_table(two)),
        connect(GATEWAY) as nc,
    ):
        replies = await asyncio.gather(
            *(nc.request(SAY.name, request, 8, headers=keyed) for _ in range(8))
        )
    assert [r.data for r in replies] == [replies[0].data] * 8
    assert [s.text for s in one.handled + two.handled] == ["once"]


async def test_the_handler_receives_the_principal_from_the_header(settings_for, connect):
    echo = Echo("one")
    async with running(ECHO, settings_for("echo"), _echo_table(echo)), connect(GATEWAY) as nc:
        reply = await nc.request(SAY.name, encode(Say(text="hi")), 5, headers=_HEADERS)
    assert msgspec.json.decode(reply.data, type=Said) == Said(
        text="hi", replica="one", principal=ADA
    )


async def test_health_answers_with_the_replica(settings_for, connect):
    async with (
        running(ECHO, settings_for("echo", "h1"), _echo_table(Echo("h1"))),
        connect(GATEWAY) as nc,
    ):
        reply = await nc.request(ECHO.health.name, b"", 5)
    health = msgspec.json.decode(reply.data, type=Health)
    assert (health.service, health.replica, health.ok) == ("echo", "h1", True)


async def _problem(nc: nats.NATS, payload: bytes, headers: dict[str, str] | None) -> Problem:
    reply = await nc.request(SAY.name, payload, 5, headers=headers)
    problem = msgspec.json.decode(reply.data, type=Problem)
    assert reply.headers[PROBLEM_HEADER] == str(problem.status)
    return problem


async def test_bad_requests_get_typed_problems_naming_what_was_wrong(settings_for, connect):
    echo = Echo("one")
    async with running(ECHO, settings_for("echo"), _echo_table(echo)), connect(GATEWAY) as nc:
        unknown = await _problem(nc, b'{"text": "x", "sender": "eve"}', _HEADERS)
        malformed = await _problem(nc, b'{"text": ', _HEADERS)
        anonymous = await _problem(nc, encode(Say(text="x")), None)
        refused = await _problem(nc, encode(Say(text="refuse")), _HEADERS)
    assert (unknown.status, unknown.rule) == (422, "invalid-request")
    assert "unknown field `sender`" in unknown.detail
    assert (malformed.status, malformed.rule) == (400, "malformed-json")
    assert (anonymous.status, anonymous.rule) == (401, "principal-missing")
    assert (refused.status, refused.rule, refused.detail) == (
        409,
        "echo-refuses",
        "asked to refuse",
    )
    assert [r.text for r in echo.handled] == ["refuse"]


async def test_a_handler_that_fails_is_a_500_naming_the_incident_its_log_line_names(
    settings_for, connect, caplog
):
    """What failed is not the caller's business, but which failure it was is: the answer
    names an incident, and the service's one line with the traceback names the same."""
    echo = Echo("one")
    async with running(ECHO, settings_for("echo"), _echo_table(echo)), connect(GATEWAY) as nc:
        failed = await _problem(nc, encode(Say(text="fail")), _HEADERS)
    assert (failed.status, failed.rule) == (500, "internal")
    incident = failed.detail.rsplit(" ", 1)[-1]
    assert failed.detail == f"{SAY.name} failed; the service logged why as incident {incident}"
    [logged] = [r for r in caplog.records if r.getMessage() == "handler failed"]
    assert (logged.incident, logged.subject) == (incident, SAY.name)
    assert "asked to fail" in logged.exc_text


async def test_a_request_id_goes_on_with_every_call_made_for_it(settings_for, connect):
    """A call made while a request is handled carries its id; the service that answers it
    handles it under that id, so its lines name it, and so do the calls it makes."""
    seen: list[str | None] = []

    async def say(request: Say, principal: Principal) -> Said:
        seen.append(logs.REQUEST.get())
        return Said(text=request.text, replica="one", principal=principal)

    async with running(ECHO, settings_for("echo"), lambda _: {SAY: say}), connect(GATEWAY) as nc:
        logs.REQUEST.set("req-7")
        await call(nc, SAY, Say(text="with"), caller=GATEWAY, principal=ADA)
        logs.REQUEST.set(None)
        await call(nc, SAY, Say(text="without"), caller=GATEWAY, principal=ADA)
    assert seen == ["req-7", None]


def test_a_line_logged_while_a_request_is_handled_names_it():
    formatter = logs._JsonLines("echo", "one")
    record = logging.makeLogRecord({"msg": "handled", "levelname": "INFO"})
    logs.REQUEST.set("req-9")
    named = msgspec.json.decode(formatter.format(record))
    logs.REQUEST.set(None)
    assert (named["request"], named["msg"]) == ("req-9", "handled")
    assert "request" not in msgspec.json.decode(formatter.format(record))


async def test_an_answer_too_large_for_the_bus_is_a_problem_at_once(settings_for, connect):
    """Never sent, it would leave its caller waiting until its timeout, then asking again."""

    async def thrice(request: Say, principal: Principal) -> Said:
        return Said(text=request.text * 3, replica="one", principal=principal)

    async with (
        running(ECHO, settings_for("echo"), lambda _svc: {SAY: thrice}),
        connect(GATEWAY) as nc,
    ):
        half = "x" * (nc.max_payload // 2)
        too_large = await _problem(nc, encode(Say(text=half)), _HEADERS)
        fits = await nc.request(SAY.name, encode(Say(text="ok")), 5, headers=_HEADERS)
    assert (too_large.status, too_large.rule) == (500, "reply-too-large")
    assert too_large.detail.startswith("the answer to tether.echo.say is 3,145,")
    assert msgspec.json.decode(fits.data, type=Said).text == "okokok"


async def test_stopping_drains_requests_in_flight(settings_for, connect):
    echo = Echo("one")
    async with connect(GATEWAY) as nc:
        async with running(ECHO, settings_for("echo"), _echo_table(echo)) as svc:
            slow = asyncio.create_task(
                nc.request(SAY.name, encode(Say(text="slow", delay_ms=300)), 5, headers=_HEADERS)
            )
            async with asyncio.timeout(10):  # a request that never arrives fails, not hangs
                while not echo.handled:  # noqa: ASYNC110 (the handler is the test's own probe)
                    await asyncio.sleep(0.01)
            svc.stop()  # while the slow request is still in its handler
        reply = await slow
    assert msgspec.json.decode(reply.data, type=Said).text == "slow"


async def test_ops_endpoint_serves_metrics_and_health(settings_for, connect):
    from aiohttp import ClientSession

    async with (
        running(ECHO, settings_for("echo"), _echo_table(Echo("m"))) as svc,
        connect(GATEWAY) as nc,
    ):
        await nc.request(SAY.name, encode(Say(text="count me")), 5, headers=_HEADERS)
        async with ClientSession() as http:
            base = f"http://127.0.0.1:{svc.ops_port}"
            metrics = await (await http.get(f"{base}/metrics")).text()
            healthz = await http.get(f"{base}/healthz")
    assert 'tether_requests_total{outcome="ok",service="echo",subject="tether.echo.say"}' in metrics
    assert "_created" not in metrics  # a series beside each that nothing reads
    assert f'tether_build_info{{version="{RELEASE}"}} 1.0' in metrics  # which runs, in a rollout
    assert healthz.status == 200


async def test_a_service_is_alive_before_its_bus_and_ready_only_while_serving_on_it(
    tmp_path, caplog
):
    """Liveness says the process answers, readiness that it serves: a replica waiting for
    NATS, or cut off from it, is not ready but is alive. Were it dead, Kubernetes would
    restart every replica through a NATS outage, into a back-off outlasting it."""
    from aiohttp import ClientSession

    port = free_port()
    settings = Settings(service="echo", nats_url=f"nats://127.0.0.1:{port}", metrics_port=0)
    svc = Service(ECHO, settings, signals=False)

    async def serve() -> None:
        async with svc:
            await svc.serve(_echo_table(Echo("r1"))(svc))

    serving = asyncio.create_task(serve())
    bus = None
    try:
        async with ClientSession() as http:

            async def probes() -> tuple[int, int]:
                base = f"http://127.0.0.1:{svc.ops_port}"
                live, ready = await http.get(f"{base}/healthz"), await http.get(f"{base}/readyz")
                return live.status, ready.status

            await eventually(lambda: asyncio.sleep(0, svc.ops_port))
            assert await probes() == (200, 503)  # no server yet

            bus = Bus(tmp_path, port=port)
            await eventually(lambda: asyncio.sleep(0, svc.serving.is_set()), timeout=20)
            assert await probes() == (200, 200)

            await bus.stop()
            await eventually(lambda: asyncio.sleep(0, not svc.nc.is_connected))
            assert await probes() == (200, 503)
            lost = [r for r in caplog.records if r.getMessage() == "nats disconnected"]
            assert [r.levelname for r in lost] == ["WARNING"]
    finally:
        if svc.serving.is_set():
            svc.stop()
        else:  # still waiting for its first server
            serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        if bus is not None:
            await bus.stop()


@pytest.mark.parametrize(
    "module, own",
    [
        ("services.ladder.main", {}),
        # Its model's client was left open by such a stop, an error after "stopped".
        ("services.agents.main", {"TETHER_MODEL_URL": "http://127.0.0.1:1/v1"}),
    ],
)
async def test_a_service_stopped_while_it_waits_for_its_bus_ends_at_once_with_status_0(module, own):
    """SIGTERM while a replica waits for its first server (an outage, a rollout): before,
    its handlers were set only once it had connected, so the signal killed it (143) with
    nothing said; now it stops as any stop does."""
    from aiohttp import ClientSession

    metrics_port = free_port()
    env = {"NATS_URL": f"nats://127.0.0.1:{free_port()}", "TETHER_METRICS_PORT": str(metrics_port)}
    async with (
        module_process(module, env | own) as service,
        ClientSession(f"http://127.0.0.1:{metrics_port}") as http,
    ):
        await eventually(answers(http, "/readyz", 503), timeout=20)  # alive, no server yet
        await stopped_cleanly(service)


def test_a_service_asking_more_replicas_than_its_bus_has_stops_with_one_line(stack):
    """Its streams and buckets at three replicas on a server alone: NATS refuses them as
    the service starts. Before, a traceback of some thirty lines."""
    env = {
        "PATH": os.environ["PATH"],
        "NATS_URL": stack.nats_url,
        "NATS_USER": "ladder",
        "NATS_PASSWORD": stack.passwords["ladder"],
        "TETHER_METRICS_PORT": "0",
        "TETHER_JS_REPLICAS": "3",
    }
    done = subprocess.run(
        [sys.executable, "-m", "services.ladder.main"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = (
        "ladder: TETHER_JS_REPLICAS=3: NATS cannot place a stream or bucket at that many "
        "replicas: replicas > 1 not supported in non-clustered mode"
    )
    assert (done.returncode, done.stderr.splitlines()[-1]) == (1, line)
    assert "Traceback" not in done.stderr


async def test_a_service_stopped_while_on_its_bus_says_nothing_is_wrong(stack):
    """A stop is no fault: its lines hold neither an error nor a warning (nats-py calls
    its disconnected callback for a close of our own too, once logged as a warning)."""
    from aiohttp import ClientSession

    metrics_port = free_port()
    env = {
        "NATS_URL": stack.nats_url,
        "NATS_USER": "audit",
        "NATS_PASSWORD": stack.passwords["audit"],
        "TETHER_METRICS_PORT": str(metrics_port),
    }
    async with (
        module_process("services.audit.main", env) as audit,
        ClientSession(f"http://127.0.0.1:{metrics_port}") as http,
    ):
        await eventually(answers(http, "/readyz", 200), timeout=20)
        lines = await stopped_cleanly(audit)
    assert [line["msg"] for line in lines if line["level"] == "warning"] == [], lines
    assert "nats closed" in [line["msg"] for line in lines]
    # Which release started, for an operator reading a rollout's logs.
    assert [line["version"] for line in lines if line["msg"] == "started"] == [RELEASE]
