"""nats-server and Redis on free ports, for the test session and the benchmarks."""

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from libs.contracts.permissions import GATEWAY, OPERATOR
from libs.contracts.registry import ServiceContract
from libs.stack.home import Home
from libs.stack.servers import free_port, nats_config, start_nats, start_redis

__all__ = ["LocalServers", "start_local"]


@dataclass
class LocalServers:
    nats_url: str
    redis_url: str
    passwords: dict[str, str]
    nats_config: dict[str, object]
    procs: list[subprocess.Popen[bytes]]  # nats-server, then redis-server


def start_local(home: Home, services: Sequence[ServiceContract]) -> LocalServers:
    """Both servers with their data under `home`, and a NATS user for every role."""
    passwords = home.ensure((GATEWAY, OPERATOR, *(s.name for s in services)))
    nats_port, redis_port = free_port(), free_port()
    config = nats_config(
        port=nats_port,
        monitor_port=free_port(),
        store_dir=home.nats_dir / "jetstream",
        passwords=passwords,
        services=services,
    )
    procs = [
        start_nats(config, home.nats_dir / "nats-server.json"),
        start_redis(redis_port, home.redis_dir),
    ]
    return LocalServers(
        nats_url=f"nats://127.0.0.1:{nats_port}",
        redis_url=f"redis://127.0.0.1:{redis_port}/0",
        passwords=passwords,
        nats_config=config,
        procs=procs,
    )
