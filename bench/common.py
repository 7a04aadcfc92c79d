"""What the benchmarks share: a stack of real processes on free ports, timing, wrk."""

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import nats
import uvloop
from nats.aio.client import Client

from libs.contracts import SERVICES
from libs.contracts.permissions import GATEWAY, OPERATOR, inbox_prefix
from libs.stack.home import Home
from libs.stack.local import start_local
from libs.stack.processes import spawn, stop_all
from libs.stack.servers import free_port, start_nodes, wait_for

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]


class Stack:
    """nats-server and Redis, and the environment a tether process needs to join them."""

    def __init__(self, home: Home, passwords: dict[str, str], nats_url: str, redis_url: str):
        self.home, self.passwords = home, passwords
        self.nats_url, self.redis_url = nats_url, redis_url
        self.procs: list[subprocess.Popen[bytes]] = []
        self.servers: list[subprocess.Popen[bytes]] = []  # nats-server, then redis-server
        self.started: list[str] = []

    def env(self, role: str, **extra: str) -> dict[str, str]:
        return (
            os.environ
            | {
                "NATS_URL": self.nats_url,
                "NATS_USER": role,
                "NATS_PASSWORD": self.passwords[role],
                "REDIS_URL": self.redis_url,
                "TETHER_HOME": str(self.home.root),
                "TETHER_LOG_LEVEL": "WARNING",
            }
            | extra
        )

    def service(self, name: str, **extra: str) -> subprocess.Popen[bytes]:
        env = self.env(name, TETHER_METRICS_PORT=str(free_port()), **extra)
        proc = spawn([sys.executable, "-m", f"services.{name}.main"], name=name, env=env)
        self.procs.append(proc)
        self.started.append(name)
        return proc

    def gateway(self, port: int, **extra: str) -> subprocess.Popen[bytes]:
        env = self.env(GATEWAY, TETHER_PORT=str(port), TETHER_RATE_LIMIT="0", **extra)
        proc = spawn([sys.executable, "-m", "services.gateway.main"], name=GATEWAY, env=env)
        self.procs.append(proc)
        for name in self.started:
            url = f"http://127.0.0.1:{port}/readyz/{name}"
            wait_for(lambda url=url: http_status(url) == 200, proc, f"{name} behind the gateway")
        return proc

    def behind_gateway(self, *names: str) -> str:
        """Each named service in its own process, behind a gateway: its address."""
        for name in names:
            self.service(name)
        port = free_port()
        self.gateway(port)
        return f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def stack() -> Iterator[Stack]:
    root = Path(tempfile.mkdtemp(prefix="tether-bench-"))
    home = Home(root)
    local = start_local(home, SERVICES)
    s = Stack(home, local.passwords, local.nats_url, local.redis_url)
    s.servers = local.procs
    try:
        yield s
    finally:
        stop_all(s.procs)
        stop_all(s.servers)
        shutil.rmtree(root, ignore_errors=True)


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


async def p50_ms(call: Callable[[], Awaitable[object]], times: int) -> float:
    """The median of `times` calls of `call`, one after another, in milliseconds."""
    latencies = []
    for _ in range(times):
        start = time.perf_counter()
        await call()
        latencies.append(time.perf_counter() - start)
    return percentile(latencies, 50) * 1e3


def on_one_node(run: Callable[[Client], Awaitable[T]]) -> T:
    """`run` on one nats-server made for the services' streams, connected as the operator;
    for a bench of one store's reads and writes, with no service running."""
    password = secrets.token_urlsafe(16)

    async def connected(url: str) -> T:
        nc = await nats.connect(
            url, user=OPERATOR, password=password, inbox_prefix=inbox_prefix(OPERATOR)
        )
        try:
            return await run(nc)
        finally:
            await nc.close()

    with tempfile.TemporaryDirectory() as root:
        procs, urls = start_nodes(Path(root), 1, {OPERATOR: password}, SERVICES)
        try:
            return uvloop.run(connected(urls[0]))
        finally:
            stop_all(procs)


async def flood(
    send: Callable[[], Awaitable[None]], *, seconds: float, in_flight: int, warmup: int = 500
) -> dict[str, float]:
    """`send` repeated by `in_flight` workers for `seconds`: per second, p50 and p99 ms."""
    for _ in range(warmup):
        await send()
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while (start := time.perf_counter()) < deadline:
            await send()
            latencies.append(time.perf_counter() - start)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    elapsed = time.perf_counter() - started
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p99_ms": percentile(latencies, 99) * 1e3,
    }


def timed(fn: Callable[[], object], n: int) -> list[float]:
    """Seconds per call, each call timed on its own."""
    out = []
    clock = time.perf_counter
    for _ in range(n):
        start = clock()
        fn()
        out.append(clock() - start)
    return out


def wrk(url: str, *, connections: int = 50, seconds: int = 10, script: str | None = None,
        headers: dict[str, str] | None = None) -> dict[str, float]:  # fmt: skip
    """Run wrk; requests/s and latency percentiles (ms)."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk (Debian's package)")
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    if script:
        argv += ["-s", script]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])}
    for q in ("50", "99"):
        value, unit = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)", out, re.M).groups()
        result[f"p{q}_ms"] = float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non_2xx"] = float(errors[1]) if errors else 0.0
    return result


def process_tree(root: int) -> dict[int, str]:
    """`root`'s descendants, each by what it runs: a service's name (`gateway`, `ladder`),
    `nats-server` or `redis-server` (Linux: read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        with contextlib.suppress(OSError):
            argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
            words = [a.decode() for a in argv if a]
            if not words:  # exited, not yet reaped
                continue
            service = next((w.split(".")[1] for w in words if w.startswith("services.")), "")
            found[pid] = service or Path(words[0].split()[0]).name  # redis rewrites its argv
    return found


def cpu_seconds(pids: dict[int, str]) -> dict[str, float]:
    """CPU time (user and system) each kind of process has used so far, summed by name."""
    tick = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for pid, name in pids.items():
        with contextlib.suppress(OSError):
            fields = (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()
            used[name] = used.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return used


def median(values: list[float]) -> float:
    return statistics.median(values)
