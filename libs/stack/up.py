"""`tether up`: the whole system on one machine, until Ctrl-C or SIGTERM."""

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable

from libs.contracts import SERVICES
from libs.contracts.permissions import GATEWAY, OPERATOR
from libs.model import ASKING
from libs.stack.home import Home
from libs.stack.servers import (
    clustered,
    nats_config,
    nats_ready,
    need_free,
    port_from_env,
    spawn_nats,
    start_redis,
    wait_for,
)
from libs.stack.supervise import ASKER, FRONT, RESTARTS, SERVICE, WITHIN_S, Supervisor

__all__ = ["ready", "up"]

_log = logging.getLogger(__name__)
_AGAIN_S = 1.0
ROLES = (GATEWAY, OPERATOR, *(s.name for s in SERVICES))


def up(home: Home, *, port: int, on_ready: Callable[[str, str], None], cluster: int = 1) -> int:
    """Start servers (unless NATS_URL and REDIS_URL name running ones), services, gateway.

    `cluster` > 1 is the production shape on one machine: that many nats-server nodes on
    loopback routes, every stream and bucket at that many replicas, and two replicas of
    every service and of the gateway, whose processes share its port. `on_ready(url,
    nats_url)` is called once /readyz is green. Returns the exit status.
    """
    passwords = home.ensure(ROLES)
    stopping: list[float] = []  # when each SIGINT or SIGTERM came
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.append(time.monotonic()))

    servers: list[subprocess.Popen[bytes]] = []
    nats_url, redis_url = os.environ.get("NATS_URL"), os.environ.get("REDIS_URL")
    need_free(port, "TETHER_PORT")
    if nats_url is None:
        servers, nats_url = _nats(home, passwords, cluster)
    if redis_url is None:
        redis_port = port_from_env("TETHER_REDIS_PORT", 6379)
        need_free(redis_port, "TETHER_REDIS_PORT")
        servers.append(start_redis(redis_port, home.redis_dir))
        redis_url = f"redis://127.0.0.1:{redis_port}/0"

    replicas = 2 if cluster > 1 else 1
    base = os.environ | {
        "NATS_URL": nats_url,
        "REDIS_URL": redis_url,
        "TETHER_HOME": str(home.root),
        "TETHER_JWT_KEY_FILE": str(home.jwt_key_file),
        "TETHER_JS_REPLICAS": str(cluster),
    }
    children = Supervisor()
    for server in servers:
        children.adopt(str(server.args[0]).rsplit("/", 1)[-1], server)
    metrics_base = port_from_env("TETHER_METRICS_BASE_PORT", 9101)
    try:
        for i, svc in enumerate(SERVICES):
            for r in range(replicas):
                env = base | {
                    "NATS_USER": svc.name,
                    "NATS_PASSWORD": passwords[svc.name],
                    # A base of 0: each service picks a free port of its own.
                    "TETHER_METRICS_PORT": str(
                        metrics_base + i * replicas + r if metrics_base else 0
                    ),
                    "TETHER_REPLICA": f"{svc.name}-{r}",
                }
                argv = [sys.executable, "-m", f"services.{svc.name}.main"]
                stage = ASKER if svc.name in ASKING else SERVICE
                children.start(f"{svc.name}-{r}", argv, env, stage=stage)
        for r in range(replicas):
            env = base | {
                "NATS_USER": GATEWAY,
                "NATS_PASSWORD": passwords[GATEWAY],
                "TETHER_PORT": str(port),
                # After the services' metrics ports, one of its own for each.
                "TETHER_METRICS_PORT": str(
                    metrics_base + len(SERVICES) * replicas + r if metrics_base else 0
                ),
                "TETHER_REPLICA": f"{GATEWAY}-{r}",
                # Two processes on one port: the kernel spreads connections between them.
                "TETHER_REUSE_PORT": "1" if replicas > 1 else "",
            }
            argv = [sys.executable, "-m", "services.gateway.main"]
            children.start(f"{GATEWAY}-{r}", argv, env, stage=FRONT)
        url = f"http://127.0.0.1:{port}"
        # A child that dies while the system starts is a fault of the setup: no restarts.
        wait_for(lambda: stopping or ready(url), children.procs, "the system", timeout=120)
        if not stopping:
            on_ready(url, nats_url)
        while not stopping:
            if (failing := children.check()) is not None:
                _log.error(
                    "a process keeps crashing; stopping",
                    extra={"child": failing, "restarts": RESTARTS, "within_s": WITHIN_S},
                )
                return 1
            time.sleep(0.2)
        return 0
    finally:
        children.stop(hurried=lambda: _asked_again(stopping))


def _asked_again(signals: list[float]) -> bool:
    """Whether a stop was asked for again, so that what is left is killed, not waited for:
    a signal a second or more after the first. Those within it are the first ask, sent by
    several senders at once (a process group's SIGTERM reaches `tether up` itself and
    `make run`, which passes it on)."""
    return any(at - signals[0] >= _AGAIN_S for at in signals[1:])


def _nats(
    home: Home, passwords: dict[str, str], cluster: int
) -> tuple[list[subprocess.Popen[bytes]], str]:
    """The embedded nats-server, or a cluster of `cluster` nodes on consecutive ports from
    TETHER_NATS_PORT, TETHER_NATS_MONITOR_PORT and TETHER_NATS_CLUSTER_PORT."""
    nats_port = port_from_env("TETHER_NATS_PORT", 4222)
    monitor_port = port_from_env("TETHER_NATS_MONITOR_PORT", 8222)
    route_port = port_from_env("TETHER_NATS_CLUSTER_PORT", 6222)
    for i in range(cluster):
        need_free(nats_port + i, "TETHER_NATS_PORT")
        need_free(monitor_port + i, "TETHER_NATS_MONITOR_PORT")
        if cluster > 1:
            need_free(route_port + i, "TETHER_NATS_CLUSTER_PORT")
    configs = [
        nats_config(
            port=nats_port + i,
            monitor_port=monitor_port + i,
            store_dir=home.nats_dir / (f"node{i}" if cluster > 1 else "jetstream"),
            passwords=passwords,
            services=SERVICES,
        )
        for i in range(cluster)
    ]
    if cluster > 1:
        configs = clustered(configs, [route_port + i for i in range(cluster)])
    procs = [spawn_nats(c, home.nats_dir / f"{c['server_name']}.json") for c in configs]
    for config in configs:
        wait_for(lambda c=config: nats_ready(c), procs, "nats", timeout=60)
    url = ",".join(f"nats://127.0.0.1:{nats_port + i}" for i in range(cluster))
    return procs, url


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False
