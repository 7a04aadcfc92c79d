"""The gateway's configuration, from environment variables with documented defaults."""

import os
import re
from collections.abc import Mapping
from typing import Annotated
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta
from redis.asyncio.connection import parse_url

from libs.runtime.settings import (
    YEAR_S,
    BadSetting,
    LogLevel,
    Port,
    Positive,
    checked_nats_url,
    converted,
    default_replica,
    key_from_env,
)

__all__ = ["GatewaySettings"]


class GatewaySettings(msgspec.Struct, frozen=True, kw_only=True):
    """
    | variable                 | default                 | meaning                                |
    |--------------------------|-------------------------|----------------------------------------|
    | TETHER_HOST              | 127.0.0.1               | where the HTTP API listens             |
    | TETHER_PORT              | 8080                    | its port                               |
    | TETHER_METRICS_HOST      | 127.0.0.1               | where /metrics and the probes listen,  |
    |                          |                         | apart from the API                     |
    | TETHER_METRICS_PORT      | 9100                    | their port; 0 picks a free one         |
    | TETHER_JWT_KEY           | (read from the file)    | the HS256 key tokens are verified with,|
    |                          |                         | at least 32 bytes                      |
    | TETHER_JWT_KEY_FILE      | $TETHER_HOME/jwt.key    | where the key is when not given        |
    | REDIS_URL                | redis://127.0.0.1:6379/0| rate limits and idempotency keys       |
    | TETHER_REDIS_TIMEOUT     | 2                       | seconds to connect to Redis or wait for|
    |                          |                         | its answer; then 503 store-unavailable |
    | NATS_URL                 | nats://127.0.0.1:4222   | the bus                                |
    | NATS_USER / NATS_PASSWORD| gateway / (empty)       | the gateway's NATS credential          |
    | TETHER_RATE_LIMIT        | 1200                    | requests a minute per principal; 0: off|
    | TETHER_STREAMS_PER_CALLER| 32                      | server-sent event streams a principal  |
    |                          |                         | may hold open on one gateway process   |
    | TETHER_REQUEST_TIMEOUT   | 5                       | seconds to wait for a service's reply  |
    | TETHER_LATE_TIMEOUT      | 60                      | seconds a keyed POST's reply is still  |
    |                          |                         | awaited after its 504, its key held in |
    |                          |                         | flight so a retry never runs it twice  |
    | TETHER_STREAM_REREAD     | 30                      | seconds after which a room's or a      |
    |                          |                         | pending stream reads again what it     |
    |                          |                         | shows, in case a word of it was lost   |
    | TETHER_PUBLIC_URL        | (the request's own)     | the scheme and host carriers call; the |
    |                          |                         | URL their webhook signatures cover     |
    | TETHER_REUSE_PORT        | (off)                   | 1: share the port with the gateway's   |
    |                          |                         | other processes (SO_REUSEPORT)         |
    | TETHER_LOG_LEVEL         | INFO                    | DEBUG, INFO, WARNING, ERROR            |
    | TETHER_REPLICA           | <hostname>-<pid>        | this process's name in its log lines   |
    """

    host: str = "127.0.0.1"
    port: Port = 8080
    metrics_host: str = "127.0.0.1"
    metrics_port: Port = 9100
    jwt_key: str
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_timeout: Positive = 2.0
    nats_url: str = "nats://127.0.0.1:4222"
    nats_user: str = "gateway"
    nats_password: str = ""
    rate_limit: Annotated[int, Meta(ge=0)] = 1200
    streams_per_caller: Annotated[int, Meta(ge=1)] = 32
    request_timeout: Positive = 5.0
    late_timeout: Annotated[float, Meta(ge=0, le=YEAR_S)] = 60.0
    stream_reread: Positive = 30.0
    public_url: str = ""
    reuse_port: bool = False
    log_level: LogLevel = "INFO"
    replica: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "GatewaySettings":
        env = os.environ if env is None else env
        given = {field: env[var] for var, field in _ENV.items() if env.get(var)}
        where, given["jwt_key"] = key_from_env(env, "TETHER_JWT_KEY", "jwt.key")
        if (size := len(given["jwt_key"].encode())) < _JWT_KEY_LEAST:
            # An empty key verifies no token (PyJWT takes none), every caller refused 401
            # as if their token were bad; a short one can be guessed, and any token forged
            # (RFC 7518 §3.2: at least the hash's size, 256 bits for HS256).
            read = "" if where == "TETHER_JWT_KEY" else f" (read from {where})"
            raise BadSetting(
                f"TETHER_JWT_KEY{read} is {size} byte{'' if size == 1 else 's'}; HS256 takes "
                f"at least {_JWT_KEY_LEAST} (`tether up` makes 64 hex characters)"
            )
        settings = converted(cls, {"replica": default_replica()} | given, _ENV)
        if settings.public_url and not _PUBLIC_URL.match(settings.public_url):
            # Every carrier signs the URL it called: one without a scheme, or with a query,
            # is no URL they call, and every webhook would be refused.
            raise BadSetting(
                f"TETHER_PUBLIC_URL={settings.public_url!r}: a URL, http:// or https:// "
                "and a host (and a path, if the gateway is served under one)"
            )
        checked_nats_url(settings.nats_url)
        try:  # as the client it makes will read it, which it does only as it connects
            parse_url(settings.redis_url)
        except ValueError as exc:
            raise BadSetting(f"REDIS_URL={settings.redis_url!r}: {exc}") from None
        redis = urlsplit(settings.redis_url)
        if redis.scheme != "unix" and not _REDIS_DB.match(redis.path):
            # redis-py reads `/x` as no database (0) and `/1/2` as 12, without a word.
            raise BadSetting(
                f"REDIS_URL={settings.redis_url!r}: the path names a database by its number"
            )
        return settings


_JWT_KEY_LEAST = 32
_REDIS_DB = re.compile(r"(/[0-9]*)?\Z")
_PUBLIC_URL = re.compile(r"https?://[^/?#\s]+(/[^?#\s]*)?\Z")


_ENV = {
    "TETHER_HOST": "host",
    "TETHER_PORT": "port",
    "TETHER_METRICS_HOST": "metrics_host",
    "TETHER_METRICS_PORT": "metrics_port",
    "REDIS_URL": "redis_url",
    "TETHER_REDIS_TIMEOUT": "redis_timeout",
    "NATS_URL": "nats_url",
    "NATS_USER": "nats_user",
    "TETHER_REUSE_PORT": "reuse_port",
    "NATS_PASSWORD": "nats_password",
    "TETHER_RATE_LIMIT": "rate_limit",
    "TETHER_STREAMS_PER_CALLER": "streams_per_caller",
    "TETHER_REQUEST_TIMEOUT": "request_timeout",
    "TETHER_LATE_TIMEOUT": "late_timeout",
    "TETHER_STREAM_REREAD": "stream_reread",
    "TETHER_PUBLIC_URL": "public_url",
    "TETHER_LOG_LEVEL": "log_level",
    "TETHER_REPLICA": "replica",
}
