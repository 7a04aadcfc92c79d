"""A service's settings come from its environment, each unset one at its documented default."""

import os
import socket
import subprocess
import sys

import pytest

from libs.model import Scripted, model_from_env
from libs.runtime.settings import BadSetting, Settings
from services.gateway.settings import GatewaySettings
from tests.support import KEY


def test_the_environment_sets_what_it_names_and_the_rest_keep_their_defaults():
    gateway = GatewaySettings.from_env({"TETHER_JWT_KEY": KEY, "TETHER_LOG_LEVEL": "DEBUG"})
    assert (gateway.log_level, gateway.replica) == ("DEBUG", f"{os.uname().nodename}-{os.getpid()}")
    settings = Settings.from_env("rooms", {"TETHER_PULL_WAIT": "0.2", "TETHER_JS_REPLICAS": "3"})
    assert (settings.pull_wait, settings.js_replicas) == (0.2, 3)
    defaults = (settings.nats_user, settings.max_in_flight, settings.metrics_port)
    assert defaults == ("rooms", 256, 9100)
    assert Settings.from_env("rooms", {}).pull_wait == 0.5
    kept = Settings.from_env("ladder", {"TETHER_SETTLED_KEPT": "3600"}).settled_kept
    assert (kept, Settings.from_env("poa", {}).settled_kept) == (3600, 7 * 24 * 3600)


def _service(env: dict[str, str]) -> Settings:
    return Settings.from_env("rooms", env)


def _gateway(env: dict[str, str]) -> GatewaySettings:
    return GatewaySettings.from_env({"TETHER_JWT_KEY": KEY, **env})


@pytest.mark.parametrize(
    "read, variable, value, reason",
    [
        (_service, "TETHER_PULL_WAIT", "soon", "Expected `float`, got `str`"),
        (_service, "TETHER_PULL_WAIT", "0", "Expected `float` > 0.0"),
        (_service, "TETHER_PULL_WAIT", "inf", "Expected `float` <= 31536000.0"),
        (_service, "TETHER_METRICS_PORT", "70000", "Expected `int` <= 65535"),
        (_service, "TETHER_MAX_IN_FLIGHT", "0", "Expected `int` >= 1"),
        (_service, "TETHER_JS_REPLICAS", "7", "Expected `int` <= 5"),
        (_service, "TETHER_SETTLED_KEPT", "0", "Expected `int` >= 1"),
        (_service, "TETHER_LOG_LEVEL", "loud", "Invalid enum value 'loud'"),
        (_gateway, "TETHER_REDIS_TIMEOUT", "-1", "Expected `float` > 0.0"),
        (_gateway, "TETHER_REQUEST_TIMEOUT", "0", "Expected `float` > 0.0"),
        (_gateway, "TETHER_REQUEST_TIMEOUT", "Infinity", "Expected `float` <= 31536000.0"),
        (_gateway, "TETHER_LATE_TIMEOUT", "inf", "Expected `float` <= 31536000.0"),
        (_gateway, "TETHER_STREAM_REREAD", "0", "Expected `float` > 0.0"),
        (_gateway, "TETHER_RATE_LIMIT", "-5", "Expected `int` >= 0"),
        (
            _gateway,
            "TETHER_PUBLIC_URL",
            "tether.example.com",
            "a URL, http:// or https:// and a host (and a path, if the gateway is served under "
            "one)",
        ),
        (_gateway, "TETHER_PORT", "http", "Expected `int`, got `str`"),
        (_gateway, "TETHER_LOG_LEVEL", "loud", "Invalid enum value 'loud'"),
        (_service, "NATS_URL", "nats://127.0.0.1:99999", "Port out of range 0-65535"),
        (_service, "NATS_URL", "nats://[::1", "Invalid IPv6 URL"),
        (_service, "NATS_URL", "http://nats:4222", "the scheme is one of nats, tls, ws, wss"),
        (_service, "NATS_URL", "nats://a:4222,", "'': no host"),
        (_service, "NATS_URL", "nats://a:4222,ws://b:80", "websocket servers mixed with others"),
        (_gateway, "NATS_URL", "nats host", "no host"),
        (
            _gateway,
            "REDIS_URL",
            "127.0.0.1:6379",
            "Redis URL must specify one of the following schemes (redis://, rediss://, unix://)",
        ),
        (_gateway, "REDIS_URL", "redis://127.0.0.1:99999/0", "Port out of range 0-65535"),
        (
            _gateway,
            "REDIS_URL",
            "redis://127.0.0.1:6379/x",
            "the path names a database by its number",
        ),
        (
            _gateway,
            "REDIS_URL",
            "redis://127.0.0.1:6379/1/2",
            "the path names a database by its number",
        ),
        (
            lambda env: model_from_env(Scripted(str), env),
            "TETHER_MODEL_URL",
            "api.openai.com/v1",
            "a base URL, http:// or https:// and a host",
        ),
    ],
)
def test_a_value_a_setting_cannot_take_is_refused_by_its_variable(read, variable, value, reason):
    with pytest.raises(BadSetting) as refused:
        read({variable: value})
    assert str(refused.value) == f"{variable}={value!r}: {reason}"


@pytest.mark.parametrize(
    "module, env, line",
    [
        (
            "services.gateway.main",
            {"TETHER_JWT_KEY": KEY, "TETHER_REDIS_TIMEOUT": "0"},
            "gateway: TETHER_REDIS_TIMEOUT='0': Expected `float` > 0.0",
        ),
        (
            "services.gateway.main",
            {"TETHER_HOME": "/nonexistent"},
            "gateway: TETHER_JWT_KEY is not set and /nonexistent/jwt.key cannot be read: "
            "No such file or directory",
        ),
        (
            "services.ladder.main",
            {"TETHER_LOG_LEVEL": "info"},
            "ladder: TETHER_LOG_LEVEL='info': Invalid enum value 'info'",
        ),
        (
            "services.mod.main",
            {"TETHER_MOD_REVIEWER": "human"},
            "mod: TETHER_MOD_REVIEWER='human': no reviewer 'human'; one of ['', 'manifest']",
        ),
        (
            "services.rooms.main",
            {"TETHER_LINES_KEY": "0123"},
            "rooms: the lines key in TETHER_LINES_KEY: the lines key must be 32 bytes "
            "(64 hex digits)",
        ),
        (
            "services.audit.main",
            {"NATS_URL": "nats://127.0.0.1:99999"},
            "audit: NATS_URL='nats://127.0.0.1:99999': Port out of range 0-65535",
        ),
        (
            "services.gateway.main",
            {"TETHER_JWT_KEY": KEY, "REDIS_URL": "redis://127.0.0.1:99999/0"},
            "gateway: REDIS_URL='redis://127.0.0.1:99999/0': Port out of range 0-65535",
        ),
        (
            "services.agents.main",
            {"TETHER_MODEL_URL": "api.openai.com/v1"},
            "agents: TETHER_MODEL_URL='api.openai.com/v1': a base URL, http:// or https:// "
            "and a host",
        ),
    ],
)
def test_a_process_with_a_bad_setting_stops_with_one_line_naming_it(module, env, line):
    """Before anything is connected: no traceback to read through, and the supervisor (or
    Kubernetes) shows the reason as the process's last words."""
    done = subprocess.run(
        [sys.executable, "-m", module],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (1, line + "\n")


@pytest.mark.parametrize(
    "env, line",
    [
        (
            {"TETHER_LOG_LEVEL": "loud"},
            "TETHER_LOG_LEVEL='loud': one of DEBUG, INFO, WARNING, ERROR",
        ),
        (
            {"NATS_URL": "nats://n:1,redis://n:2"},
            "NATS_URL='nats://n:1,redis://n:2': 'redis://n:2': "
            "the scheme is one of nats, tls, ws, wss",
        ),
    ],
)
def test_tether_up_with_a_value_it_cannot_take_stops_before_it_starts_anything(tmp_path, env, line):
    """Else each process it starts would stop on it, again and again."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "up"],
        env={"PATH": os.environ["PATH"], "TETHER_HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (1, f"tether up: {line}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "module, env, port_variable",
    [
        ("services.ladder.main", {}, "TETHER_METRICS_PORT"),
        ("services.gateway.main", {"TETHER_JWT_KEY": KEY}, "TETHER_METRICS_PORT"),
        ("services.gateway.main", {"TETHER_JWT_KEY": KEY}, "TETHER_PORT"),
    ],
)
def test_a_process_whose_port_is_taken_stops_with_one_line_naming_it(module, env, port_variable):
    """A port in use is known only as the process listens (after the gateway has met its
    bus): before, a traceback of some thirty lines."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = {"TETHER_PORT": "0", "TETHER_METRICS_PORT": "0", port_variable: str(port)}
        done = subprocess.run(
            [sys.executable, "-m", module],
            env={"PATH": os.environ["PATH"], "NATS_URL": "nats://127.0.0.1:1", **env, **ports},
            capture_output=True,
            text=True,
            timeout=60,
        )
    host_variable = port_variable.replace("PORT", "HOST")
    named = f"{host_variable}='127.0.0.1', {port_variable}={port}: cannot listen there: "
    last = done.stderr.splitlines()[-1]
    assert (done.returncode, "Traceback" in done.stderr) == (1, False)
    assert last.startswith(f"{module.split('.')[1]}: {named}") and "in use" in last


@pytest.mark.parametrize(
    "key, read, size",
    [("", " (read from {home}/jwt.key)", "0 bytes"), ("short", "", "5 bytes")],
)
def test_a_token_key_too_short_for_hs256_is_refused(tmp_path, key, read, size):
    """An empty key (an empty Secret, a key file cut short) verified no token, every
    caller refused 401 as if theirs were bad; a short one can be guessed (RFC 7518 §3.2:
    HS256 takes 256 bits or more). Each is refused as the gateway starts."""
    (tmp_path / "jwt.key").write_text(key)
    env = {"TETHER_HOME": str(tmp_path)} | ({"TETHER_JWT_KEY": key} if key else {})
    with pytest.raises(BadSetting) as refused:
        GatewaySettings.from_env(env)
    assert str(refused.value) == (
        f"TETHER_JWT_KEY{read.format(home=tmp_path)} is {size}; HS256 takes at least 32 "
        "(`tether up` makes 64 hex characters)"
    )
