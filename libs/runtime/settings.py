"""A service's configuration, from environment variables with documented defaults."""

import os
import socket

import msgspec

__all__ = ["Settings"]


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Read by `Settings.from_env(service)`.

    | variable              | default                   | meaning                                 |
    |-----------------------|---------------------------|-----------------------------------------|
    | NATS_URL              | nats://127.0.0.1:4222     | comma-separated NATS servers            |
    | NATS_USER             | the service's name        | this service's NATS user                |
    | NATS_PASSWORD         | (empty)                   | its password                            |
    | TETHER_METRICS_HOST   | 127.0.0.1                 | where /metrics and /healthz listen      |
    | TETHER_METRICS_PORT   | 9100                      | their port; 0 picks a free one          |
    | TETHER_MAX_IN_FLIGHT  | 256                       | requests handled at once per replica    |
    | TETHER_LOG_LEVEL      | INFO                      | DEBUG, INFO, WARNING, ERROR             |
    | TETHER_REPLICA        | <hostname>-<pid>          | this replica's name in logs and health  |
    """

    service: str
    nats_url: str = "nats://127.0.0.1:4222"
    nats_user: str = ""
    nats_password: str = ""
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9100
    max_in_flight: int = 256
    log_level: str = "INFO"
    replica: str = ""

    @classmethod
    def from_env(cls, service: str, env: dict[str, str] | None = None) -> "Settings":
        env = dict(os.environ if env is None else env)
        return cls(
            service=service,
            nats_url=env.get("NATS_URL", cls.nats_url),
            nats_user=env.get("NATS_USER", service),
            nats_password=env.get("NATS_PASSWORD", ""),
            metrics_host=env.get("TETHER_METRICS_HOST", cls.metrics_host),
            metrics_port=int(env.get("TETHER_METRICS_PORT", cls.metrics_port)),
            max_in_flight=int(env.get("TETHER_MAX_IN_FLIGHT", cls.max_in_flight)),
            log_level=env.get("TETHER_LOG_LEVEL", cls.log_level).upper(),
            replica=env.get("TETHER_REPLICA") or f"{socket.gethostname()}-{os.getpid()}",
        )
