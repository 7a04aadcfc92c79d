"""What tests share: a small service of their own, and helpers to run and call services."""

import asyncio
import contextlib
import inspect
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import nats
from aiohttp import ClientSession
from nats.js.api import DeliverPolicy
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue
from redis.asyncio import Redis

from libs.contracts.agents import PLAN, SetPlan
from libs.contracts.base import Contract
from libs.contracts.permissions import OPERATOR, inbox_prefix
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused, Unavailable
from libs.contracts.registry import REPLIES_BUCKET, ServiceContract, Subject, service_contract
from libs.runtime.bus import AWAY
from libs.runtime.calls import call
from libs.runtime.consumer import SYSTEM_ORG, Retry
from libs.runtime.dead import parked
from libs.runtime.leader import written_since
from libs.runtime.service import Service
from libs.runtime.settings import Settings
from libs.stack.processes import stop_all
from libs.stack.servers import free_port, start_nats
from services.gateway.app import OPS
from services.gateway.tokens import LEEWAY_S, mint


class Say(Contract):
    """Ask the echo service to say `text`; `delay_ms` holds the reply that long."""

    text: str
    delay_ms: int = 0


class Said(Contract):
    text: str
    replica: str
    principal: Principal


SAY = Subject(name="tether.echo.say", request=Say, reply=Said, summary="echo a text")
# echo also owns timers, delivered to tether.timer.echo.ping.
ECHO = service_contract(
    "echo",
    [SAY],
    shared_streams=("EVENTS", "TIMERS", "DEAD"),
    timer_targets=("ping",),
)
# A second test service, to show one service's credential refused on another's subjects.
OTHER = service_contract(
    "other",
    [Subject(name="tether.other.say", request=Say, reply=Said, summary="echo")],
    buckets=("other-things",),
)
TEST_SERVICES = (ECHO, OTHER)
# The rooms service's key for the lines' sealed credentials, in every test of the session.
LINES_KEY = secrets.token_hex(32)
# Retries that give up in well under a second: a fault test's message is parked at once.
FAST_RETRY = Retry(first_s=0.05, most_s=0.2, attempts=3)


class Echo:
    """A handler that counts what it handled, so a test can see a request never arrived."""

    def __init__(self, replica: str) -> None:
        self.replica = replica
        self.handled: list[Say] = []

    async def say(self, request: Say, principal: Principal) -> Said:
        self.handled.append(request)
        if request.delay_ms:
            await asyncio.sleep(request.delay_ms / 1000)
        if request.text == "refuse":
            raise Refused("echo-refuses", 409, "asked to refuse")
        if request.text == "fail":
            raise RuntimeError("asked to fail")
        return Said(text=request.text, replica=self.replica, principal=principal)


class Bus:
    """A nats-server of the test's own, stopped and started again on its port and store."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        port = port or free_port()
        self.url = f"nats://127.0.0.1:{port}"
        self.config = {
            "listen": f"127.0.0.1:{port}",
            "http": f"127.0.0.1:{free_port()}",
            "jetstream": {"store_dir": str(root / "js")},
        }
        self.file = root / "nats.json"
        self.server = start_nats(self.config, self.file)

    async def stop(self) -> None:
        await asyncio.to_thread(stop_all, [self.server])

    async def start(self) -> None:
        self.server = await asyncio.to_thread(start_nats, self.config, self.file)


class Link:
    """A TCP proxy between a client and a server that a test breaks, as networks break:
    `cut` closes every connection through it and each new one at once, until `mend`;
    `hold` silently drops whatever its connections carry, as a peer that is gone without
    a word does, while new connections pass; `deafen` keeps what the server sends its
    clients back, undropped, until `hear`: every answer comes after its asker gave up.
    `deafen_at(marker, seconds)` deafens as a client sends `marker`, once, for `seconds`;
    `cut_at(marker, seconds)` drops what holds `marker` and cuts, once, for `seconds`: what
    was sent last never arrives, as from a replica whose network failed as it wrote."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("nats://").rpartition(":")
        self._upstream = (host, int(port))
        self._writers: set[asyncio.StreamWriter] = set()
        self._held: set[asyncio.StreamWriter] = set()
        self._hearing = asyncio.Event()
        self._hearing.set()
        self._deaf_at: tuple[bytes, float] | None = None
        self._cut_at: tuple[bytes, float] | None = None
        self.cut_off = False

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._pass, "127.0.0.1", 0)
        return f"nats://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *_: object) -> None:
        self.cut()
        self._server.close()
        await self._server.wait_closed()

    def cut(self) -> None:
        self.cut_off = True
        for writer in self._writers:
            writer.close()

    def mend(self) -> None:
        self.cut_off = False

    def hold(self) -> None:
        self._held |= self._writers

    def deafen(self) -> None:
        self._hearing.clear()

    def hear(self) -> None:
        self._hearing.set()

    def deafen_at(self, marker: bytes, seconds: float) -> None:
        self._deaf_at = (marker, seconds)

    def cut_at(self, marker: bytes, seconds: float) -> None:
        self._cut_at = (marker, seconds)

    @property
    def armed(self) -> bool:
        """Whether a `deafen_at` or `cut_at` still waits for its marker."""
        return self._deaf_at is not None or self._cut_at is not None

    async def _pass(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer), self._pipe(up_reader, writer, self._hearing)
            )
        finally:
            self._writers -= {writer, up_writer}

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        gate: asyncio.Event | None = None,
    ) -> None:
        try:
            while data := await reader.read(65536):
                if gate is not None:
                    await gate.wait()
                elif self._deaf_at is not None and self._deaf_at[0] in data:
                    self.deafen()
                    asyncio.get_running_loop().call_later(self._deaf_at[1], self.hear)
                    self._deaf_at = None
                elif self._cut_at is not None and self._cut_at[0] in data:
                    self.cut()
                    asyncio.get_running_loop().call_later(self._cut_at[1], self.mend)
                    self._cut_at = None
                    return
                if writer not in self._held:
                    writer.write(data)
                    await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def across_a_link(
    url: str, role: str, password: str
) -> AsyncIterator[tuple[nats.NATS, Link]]:
    """A connection as `role` to the server at `url` through a Link of its own: heard again,
    closed, and the Link gone after the block."""
    async with (link := Link(url)) as through:
        nc = await nats.connect(
            through, user=role, password=password, inbox_prefix=inbox_prefix(role)
        )
        try:
            yield nc, link
        finally:
            link.hear()
            await nc.close()


def encode(value: object) -> bytes:
    return msgspec.json.encode(value)


@contextlib.asynccontextmanager
async def running(
    contract: ServiceContract, settings: Settings, table_of: Callable[[Service], Mapping]
) -> AsyncIterator[Service]:
    """A service replica in this process, serving until the block ends, then drained.

    `table_of(svc)` returns the handler table, or an awaitable of it (to open stores first).
    """
    async with Service(contract, settings, signals=False) as svc:
        table = table_of(svc)
        if inspect.isawaitable(table):
            table = await table
        task = asyncio.create_task(svc.serve(table))
        await asyncio.wait_for(svc.serving.wait(), 10)
        try:
            yield svc
        finally:
            svc.stop()
            await asyncio.wait_for(task, 30)  # a drain that never ends fails, not hangs


@contextlib.asynccontextmanager
async def serving(
    contract: ServiceContract, settings: Settings, serve: Callable[[Service], Awaitable[None]]
) -> AsyncIterator[Service]:
    """A whole service replica in this process (`serve(svc)` as its main does), serving
    until the block ends, then stopped and drained."""
    async with Service(contract, settings, signals=False) as svc:
        task = asyncio.create_task(serve(svc))
        ready = asyncio.create_task(svc.serving.wait())
        await asyncio.wait({task, ready}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            ready.cancel()
            task.result()  # raises why it stopped
        try:
            yield svc
        finally:
            svc.stop()
            await asyncio.wait_for(task, 30)


@contextlib.asynccontextmanager
async def serving_across_a_link(
    contract: ServiceContract, settings: Settings, serve: Callable[[Service], Awaitable[None]]
) -> AsyncIterator[Link]:
    """`serving`, the replica's connection through a Link of its own: heard again before
    the replica stops, so it drains."""
    async with (link := Link(settings.nats_url)) as through:
        linked = msgspec.structs.replace(settings, nats_url=through)
        async with serving(contract, linked, serve):
            try:
                yield link
            finally:
                link.hear()


# Tokens, signed with the key the test gateways verify with.
KEY = secrets.token_hex(32)


@contextlib.asynccontextmanager
async def module_process(
    module: str, env: Mapping[str, str]
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`python -m module` with `env` over this one's, its output kept; killed at the end
    if still running."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        env=os.environ | dict(env),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _stopped(pid: int) -> bool:
    """Every thread of `pid` stopped: a SIGSTOP is delivered to each thread as it next
    runs, and until the last one has, the process may still answer (a nats-server's
    follower acking an append, on a loaded machine)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just exited
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] not in "tT":
                return False
    return True


@contextlib.contextmanager
def frozen(*pids: int) -> Iterator[None]:
    """The processes stopped (SIGSTOP) for the block, each thread of each stopped before
    it begins, and let go on (SIGCONT) after it."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 10
        while not all(_stopped(pid) for pid in pids):
            assert time.monotonic() < deadline, f"not stopped in 10 s: {pids}"
            time.sleep(0.001)
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


async def status_of(http: ClientSession, path: str) -> int | None:
    """A GET's status, or None while nothing listens."""
    try:
        async with http.get(path) as response:
            return response.status
    except OSError:
        return None


def answers(http: ClientSession, path: str, status: int) -> Callable[[], Awaitable[bool]]:
    """A check for `eventually`: a GET of `path` answers `status`."""

    async def check() -> bool:
        return await status_of(http, path) == status

    return check


async def deaf_once(heard: list[asyncio.CancelledError]) -> None:
    """Sleeps until cancelled twice: the first cancel is dropped, as nats-py's `wait_for`
    drops one on Python 3.11 (libs/runtime/tasks). `heard` gets each cancel."""
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError as exc:
            heard.append(exc)
            if len(heard) > 1:
                raise


async def stopped(proc: asyncio.subprocess.Process) -> list[dict[str, Any]]:
    """SIGTERM to `proc`: it exits 0 within 10 s; every line it logged."""
    proc.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(10):
            said, _ = await proc.communicate()
    except TimeoutError:
        # What it was doing when it did not stop is the whole story of the failure.
        proc.kill()
        said, _ = await proc.communicate()
        raise AssertionError(f"still running 10 s after SIGTERM:\n{said.decode()}") from None
    lines = [json.loads(line) for line in said.splitlines()]
    assert proc.returncode == 0, lines
    return lines


async def stopped_cleanly(proc: asyncio.subprocess.Process) -> list[dict[str, Any]]:
    """`stopped`, with `stopped` its last line and none an error."""
    lines = await stopped(proc)
    assert lines[-1]["msg"] == "stopped", lines
    assert not [line for line in lines if line["level"] == "error"], lines
    return lines


def token(org: str | None = "acme", user: str = "acme/ada", **claims: object) -> str:
    return mint(KEY, org=org, user=user, now=int(time.time()), **claims)  # type: ignore[arg-type]


async def set_plan(operator, org: str, plan: str) -> None:
    """`org` put on `plan` by the operator, as `tether plan` does."""
    by = Principal(org=SYSTEM_ORG, sub=OPERATOR)
    await call(operator, PLAN, SetPlan(org=org, plan=plan), caller=OPERATOR, principal=by)


async def org_agent(
    api, operator, org: str, admin: dict, persona: str, kind: str = "agent", ambient: bool = False
) -> str:
    """The id of an agent or bot of `org` made by its admin (on the team plan): a token acts
    as one only while it stands."""
    await set_plan(operator, org, "team")
    body = {"persona": persona, "kind": kind, "ambient": ambient}
    made = await api.post("/v1/agents", json=body, headers=admin)
    assert made.status == 201, await made.text()
    return (await made.json())["id"]


async def history(kv: KeyValue, key: str) -> list[KeyValue.Entry]:
    """Every entry the bucket holds for `key`, oldest first (a deletion's or a purge's
    marker with its operation), read message by message from its stream. nats-py's
    `history` can end before the entries it is sent, read as none (NoKeysError): its
    consumer's info, saying none is pending, can overtake them on the wire (as
    services/gateway/watch.py says of its watches)."""
    return [
        KeyValue.Entry(
            bucket=kv._name,
            key=key,
            value=msg.data,
            revision=int(msg.headers["Nats-Sequence"]),
            delta=None,
            created=None,
            operation=(msg.headers or {}).get("KV-Operation"),
        )
        async for msg in written_since(kv, key, 0)
    ]


def expiring(org: str, user: str, seconds: int) -> str:
    """A token of `user`'s taken for `seconds` more: its expiry passed, within the leeway."""
    expired = int(time.time()) - LEEWAY_S + seconds
    return mint(KEY, org=org, user=user, now=expired - 60, ttl=60)


def bearer(value: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {value or token()}"}


CHROMIUM = "/usr/bin/chromium"  # `make test` installs it
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.asynccontextmanager
async def browser_page(url: str) -> AsyncIterator[Any]:
    """A page of headless Chromium (Debian's, driven by Playwright) open at `url`. A script
    of the page that throws, and nothing catches, fails the test when it ends: the person
    would see nothing of it but a page that does less."""
    from playwright.async_api import async_playwright

    thrown: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = await browser.new_page()
            page.on("pageerror", lambda error: thrown.append(f"{page.url}: {error}"))
            await page.goto(url)
            yield page
        finally:
            await browser.close()
    assert not thrown, f"a page's script threw: {thrown}"


async def accessible(page) -> None:
    """The page as it stands passes axe-core's checks (WCAG 2 A and AA, and axe's best
    practices), each violation named with what it is and where; shows where the keyboard's
    focus is on each control it reaches (WCAG 2.4.7); and reflows on a screen 320 CSS pixels
    wide with nothing wider than it (WCAG 1.4.10). axe sees neither of the last two. A
    person who reads the console by a screen reader, by keyboard or on a phone is met as
    anyone."""
    from axe_playwright_python.async_playwright import Axe

    found = (await Axe().run(page)).response["violations"]
    assert not found, [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in found
    ]
    unseen = await _focused_unseen(page)
    assert not unseen, f"focused by keyboard with nothing to show it: {unseen}"
    size = page.viewport_size
    await page.set_viewport_size({"width": 320, "height": size["height"]})
    try:
        wider = await page.evaluate(_WIDER_THAN_THE_SCREEN)
    finally:
        await page.set_viewport_size(size)
    assert not wider, f"wider than a 320-pixel screen: {wider}"


async def _focused_unseen(page) -> list[str]:
    """Each control the Tab key reaches, once round, that shows no outline or shadow while
    focused, by tag, id, class and text."""
    unseen: list[str] = []
    await page.evaluate("() => { delete window.tetherFirstFocused; }")
    for _ in range(500):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(_TAB_REACHED)
        if focused is None:  # the document itself, between the last control and the first
            continue
        if focused["again"]:
            break
        if not focused["shown"]:
            unseen.append(focused["at"])
    return unseen


# The control the Tab key reached: where it is, whether anything draws its focus, and
# whether it is the first one reached again (the round is done).
_TAB_REACHED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const again = e === window.tetherFirstFocused;
  window.tetherFirstFocused ??= e;
  const s = getComputedStyle(e);
  const text = e.textContent.trim().slice(0, 30);
  return {
    at: `${e.tagName.toLowerCase()}#${e.id}.${e.className}: ${text}`,
    // Focus within a control's own parts (a month input's picker) is drawn there.
    shown: !e.matches(":focus-visible") || s.outlineStyle !== "none" || s.boxShadow !== "none",
    again,
  };
}"""
# What a page shows past the screen's right edge, by tag, id and class: the outermost of
# each, not every element within it.
_WIDER_THAN_THE_SCREEN = """() => {
  const edge = document.documentElement.clientWidth + 1;
  const wider = new Set([...document.querySelectorAll("body *")]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().right > edge));
  return [...wider].filter(e => !wider.has(e.parentElement))
    .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`);
}"""


async def led_to(page) -> list[str]:
    """Where a console page's nav leads the person signed in, in its order."""
    return [await a.get_attribute("href") for a in await page.locator("nav a:visible").all()]


async def forget_kept_answers(nc: nats.NATS, service: str) -> None:
    """What a replica that dies between its change and keeping its answer leaves: nothing of
    `service`'s in `replies`, so a retry reaches its handler again."""
    await nc.jetstream().purge_stream(
        f"KV_{REPLIES_BUCKET}", subject=f"$KV.{REPLIES_BUCKET}.{service}.>"
    )


async def answered_again_after_a_failover(
    api, path: str, body: dict, headers: dict[str, str], *, service: str, redis_url: str,
    operator: nats.NATS, status: int = 201, method: str = "POST",
) -> dict | None:  # fmt: skip
    """`body` sent to `path` by `method` with `headers`, which carry an Idempotency-Key;
    its answer lost with its gateway and with the `service` replica that made it, before it
    was kept; and sent again. The answer, the same both times, with `status` (None: 204)."""
    first = await api.request(method, path, json=body, headers=headers)
    assert first.status == status, await first.text()
    await forget_idempotency_key(redis_url, headers["Idempotency-Key"])
    await forget_kept_answers(operator, service)
    again = await api.request(method, path, json=body, headers=headers)
    assert again.status == status, await again.text()
    if status == 204:
        return None
    assert await again.json() == await first.json()
    return await first.json()


async def kept_answers(nc: nats.NATS, service: str) -> set[str]:
    """The subjects of the answers `service` keeps in `replies`."""
    info = await nc.jetstream().stream_info(
        f"KV_{REPLIES_BUCKET}", subjects_filter=f"$KV.{REPLIES_BUCKET}.{service}.>"
    )
    return set(info.state.subjects or {})


async def forget_idempotency_key(redis_url: str, key: str) -> None:
    """What a gateway killed mid-request leaves: no answer kept under the client's `key`,
    so the client's retry runs again, with the same key, through another gateway."""
    redis = Redis.from_url(redis_url)
    try:
        names = [name async for name in redis.scan_iter(match=f"tether:idem:*:{key}")]
        assert len(names) == 1, names
        await redis.delete(*names)
    finally:
        await redis.aclose()


T = TypeVar("T")


async def published_from_now(js: JetStreamContext, subject: str) -> Any:
    """An ordered consumer of what is stored on `subject` from now on. A test reads only
    its own: what earlier tests of the session published (garbage among it) is not read."""
    return await js.subscribe(subject, ordered_consumer=True, deliver_policy=DeliverPolicy.NEW)


async def operator_on(url: str, password: str) -> nats.NATS:
    """The operator's connection to one node of `three_nodes`."""
    return await nats.connect(
        url, user=OPERATOR, password=password, inbox_prefix=inbox_prefix(OPERATOR)
    )


async def asked_again(ask: Callable[..., Awaitable[T]], *args: object) -> T:
    """`ask(*args)`, asked again while the stream elects a leader (503, or no one answers a
    write) or a busy node is late: a read or write that fails is not one that misses, and
    the services ask again too."""
    for _ in range(50):
        try:
            return await ask(*args)
        except (*AWAY, Unavailable):
            await asyncio.sleep(0.1)
    return await ask(*args)


async def gateway_metrics(client: Any) -> str:
    """What the gateway under test serves its operator's scraper: /metrics on its own port,
    apart from the API's."""
    port = client.app[OPS].addresses[0][1]
    async with ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as r:
        assert r.status == 200
        return await r.text()


async def parked_holding(nc: nats.NATS, reader: str, marker: str) -> bool:
    """Whether `reader` (`<service>.<durable>`) has parked a letter holding `marker`: what
    a test's own message holds (its ask, draft or shift), among every test's letters."""
    return any(marker.encode() in letter.data for letter in await parked(nc, reader))
