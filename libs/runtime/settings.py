"""A service's configuration, from environment variables with documented defaults."""

import os
import socket
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Literal, TypeVar
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta

__all__ = [
    "SETTLED_KEPT",
    "YEAR_S",
    "BadSetting",
    "LogLevel",
    "Port",
    "Positive",
    "Settings",
    "checked_nats_url",
    "converted",
    "default_replica",
    "key_from_env",
]

S = TypeVar("S", bound=msgspec.Struct)
Port = Annotated[int, Meta(ge=0, le=65535)]
# Seconds, at most a year: "inf" is a float too, and a wait that never ends.
YEAR_S = 365 * 24 * 3600
Positive = Annotated[float, Meta(gt=0, le=YEAR_S)]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
# How long what has settled (a window, a confirmation, an ask, a run's claim, a cover) is
# kept, unless told.
SETTLED_KEPT = timedelta(days=7)


class BadSetting(ValueError):
    """An environment variable whose value its setting cannot take, named with it."""


def converted(cls: type[S], values: Mapping[str, object], variables: Mapping[str, str]) -> S:
    """`values` as `cls`; a value it refuses is a BadSetting naming the variable it came
    from (`variables`: variable → field), not the field."""
    try:
        return msgspec.convert(values, cls, strict=False)
    except msgspec.ValidationError as exc:
        reason, at, path = str(exc).rpartition(" - at `$.")
        if not at:
            raise BadSetting(str(exc)) from None
        field = path.removesuffix("`")
        variable = next((v for v, f in variables.items() if f == field), field)
        raise BadSetting(f"{variable}={values.get(field)!r}: {reason}") from None


def key_from_env(env: Mapping[str, str], variable: str, file_name: str) -> tuple[str, str]:
    """A key: `variable`'s value, else what the file `<variable>_FILE` names holds, else
    $TETHER_HOME/`file_name`'s; with where it came from. Unreadable, it is a BadSetting."""
    if env.get(variable):
        return variable, env[variable]
    home = env.get("TETHER_HOME", ".tether")
    path = env.get(f"{variable}_FILE") or os.path.join(home, file_name)
    try:
        with open(path) as f:
            return path, f.read().strip()
    except OSError as exc:
        raise BadSetting(
            f"{variable} is not set and {path} cannot be read: {exc.strerror}"
        ) from None


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Read by `Settings.from_env(service)`.

    | variable              | default                   | meaning                                 |
    |-----------------------|---------------------------|-----------------------------------------|
    | NATS_URL              | nats://127.0.0.1:4222     | comma-separated NATS servers            |
    | NATS_USER             | the service's name        | this service's NATS user                |
    | NATS_PASSWORD         | (empty)                   | its password                            |
    | TETHER_METRICS_HOST   | 127.0.0.1                 | where /metrics and the probes listen    |
    | TETHER_METRICS_PORT   | 9100                      | their port; 0 picks a free one          |
    | TETHER_MAX_IN_FLIGHT  | 256                       | requests handled at once per replica    |
    | TETHER_LOG_LEVEL      | INFO                      | DEBUG, INFO, WARNING, ERROR             |
    | TETHER_REPLICA        | <hostname>-<pid>          | this replica's name in logs and health  |
    | TETHER_JS_REPLICAS    | 1                         | replicas of the streams and buckets it  |
    |                       |                           | creates (3 on a three-node cluster)     |
    | TETHER_PULL_WAIT      | 0.5                       | seconds a reader's pull waits for new   |
    |                       |                           | messages: the longest a stop waits      |
    | TETHER_SETTLED_KEPT   | 604800 (a week)           | seconds the ladder, PoA, the rooms and  |
    |                       |                           | the Chonks keep what is settled (a      |
    |                       |                           | window, a confirmation, an ask, a draft |
    |                       |                           | sent or discarded, a run's claim, a     |
    |                       |                           | cover); then it is gone                 |
    """

    service: str
    nats_url: str = "nats://127.0.0.1:4222"
    nats_user: str = ""
    nats_password: str = ""
    metrics_host: str = "127.0.0.1"
    metrics_port: Port = 9100
    max_in_flight: Annotated[int, Meta(ge=1)] = 256
    log_level: LogLevel = "INFO"
    replica: str = ""
    js_replicas: Annotated[int, Meta(ge=1, le=5)] = 1
    pull_wait: Positive = 0.5
    settled_kept: Annotated[int, Meta(ge=1)] = int(SETTLED_KEPT.total_seconds())

    @classmethod
    def from_env(cls, service: str, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        given = {field: env[var] for var, field in _ENV.items() if env.get(var)}
        defaults = {"service": service, "nats_user": service, "replica": default_replica()}
        settings = converted(cls, defaults | given, _ENV)
        checked_nats_url(settings.nats_url)
        return settings


_ENV = {
    "NATS_URL": "nats_url",
    "NATS_USER": "nats_user",
    "NATS_PASSWORD": "nats_password",
    "TETHER_METRICS_HOST": "metrics_host",
    "TETHER_METRICS_PORT": "metrics_port",
    "TETHER_MAX_IN_FLIGHT": "max_in_flight",
    "TETHER_LOG_LEVEL": "log_level",
    "TETHER_REPLICA": "replica",
    "TETHER_JS_REPLICAS": "js_replicas",
    "TETHER_PULL_WAIT": "pull_wait",
    "TETHER_SETTLED_KEPT": "settled_kept",
}


_NATS_SCHEMES = ("nats", "tls", "ws", "wss")


def checked_nats_url(url: str) -> str:
    """`url`, if it is servers nats-py can connect to: comma-separated, each
    `[scheme://][user:password@]host[:port]` with the scheme nats, tls, ws or wss, websockets
    not mixed with the others. nats-py finds out only as it connects, with a traceback."""
    websockets = set()
    for server in url.split(","):
        server = server.strip()
        named = f"NATS_URL={url!r}: " + ("" if server == url else f"{server!r}: ")
        try:
            parts = urlsplit(server if "://" in server else f"nats://{server}")
            parts.port  # noqa: B018 (raises on a port that is no port)
        except ValueError as exc:
            raise BadSetting(f"{named}{exc}") from None
        if parts.scheme not in _NATS_SCHEMES:
            raise BadSetting(f"{named}the scheme is one of {', '.join(_NATS_SCHEMES)}")
        if not parts.hostname or any(c.isspace() for c in server):
            raise BadSetting(f"{named}no host")
        websockets.add(parts.scheme in ("ws", "wss"))
    if len(websockets) > 1:
        raise BadSetting(f"NATS_URL={url!r}: websocket servers mixed with others")
    return url


def default_replica() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"
