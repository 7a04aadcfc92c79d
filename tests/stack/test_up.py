"""`tether up` as a person runs it: servers, services, gateway; then a clean stop."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest

from libs.contracts import SERVICES
from libs.stack.home import Home
from libs.stack.servers import free_port


def _children(pid: int) -> set[int]:
    """Every descendant of `pid`, from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    return {p for p in pids if Path(f"/proc/{p}").exists()}


@contextlib.contextmanager
def tether_up(home: Path, log: Path, **extra: str) -> Iterator[tuple]:
    """`tether up` with its state in `home`, on free ports, its log in `log`, until its
    token is printed: (process, url, env, lines printed); killed at the end if still up."""
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")}
    port = free_port()
    env |= {
        "TETHER_HOME": str(home),
        "TETHER_PORT": str(port),
        "TETHER_NATS_PORT": str(free_port()),
        "TETHER_NATS_MONITOR_PORT": str(free_port()),
        "TETHER_REDIS_PORT": str(free_port()),
        "TETHER_METRICS_BASE_PORT": "0",
        **extra,
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if line.startswith("eyJ"):
            break
        assert proc.poll() is None, f"tether up exited: {lines}"
    try:
        yield proc, f"http://127.0.0.1:{port}", env, lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def up(tmp_path):
    with tether_up(tmp_path / "home", tmp_path / "up.log") as started:
        yield started


def _get(url: str, token: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_up_prints_the_address_and_a_token_then_stops_cleanly_on_sigterm(up):
    proc, url, env, lines = up
    token = lines[-1].strip()
    assert any(f"tether is up at {url}" in line for line in lines)
    assert _get(f"{url}/readyz")[0] == 200
    assert _get(f"{url}/v1/openapi.json", token)[0] == 200
    minted = subprocess.run(
        [sys.executable, "-m", "cli.main", "token", "--org", "acme", "--user", "acme/bob"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    claims = jwt.decode(
        minted,
        Path(env["TETHER_HOME"], "jwt.key").read_text().strip(),
        algorithms=["HS256"],
        audience="tether",
    )
    assert (claims["org"], claims["sub"]) == ("acme", "acme/bob")
    unusable = subprocess.run(  # a token no gateway would take is not minted
        [sys.executable, "-m", "cli.main", "token", "--org", "acme", "--user", "bob"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert (unusable.returncode, unusable.stdout) == (2, "")
    assert "argument --user: 'bob' is not a person, OWNER/NAME" in unusable.stderr
    children = _children(proc.pid)
    assert children
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert _alive(children) == set()
    # The gateway stopped first, while the services still answered what it held; then each
    # service drained over the bus before the servers went; and nothing failed.
    log = (Path(env["TETHER_HOME"]).parent / "up.log").read_text()
    said = [(r["service"], r["msg"]) for r in map(json.loads, log.splitlines())]
    stopped = [service for service, msg in said if msg == "stopped"]
    assert stopped[0] == "gateway" and set(stopped[1:]) == {s.name for s in SERVICES}, log
    assert said.index(("gateway", "stopped")) < min(
        said.index((s.name, "draining")) for s in SERVICES
    ), log
    assert "Traceback" not in log and '"level":"error"' not in log, log


def test_children_die_with_a_killed_parent(up):
    proc, _, _, _ = up
    children = _children(proc.pid)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 15
    while _alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(children) == set()


def test_up_with_nats_url_and_redis_url_starts_neither_server(stack):
    port = free_port()
    env = stack.env(TETHER_PORT=str(port), TETHER_METRICS_BASE_PORT="0")
    argv = [sys.executable, "-m", "cli.main", "up"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        for line in proc.stdout:
            if line.startswith("eyJ"):
                break
        assert _get(f"http://127.0.0.1:{port}/readyz")[0] == 200
        names = {
            Path(f"/proc/{pid}/comm").read_text().strip() for pid in _alive(_children(proc.pid))
        }
        assert "nats-server" not in names and "redis-server" not in names
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize("variable", ["TETHER_NATS_PORT", "TETHER_REDIS_PORT", "TETHER_PORT"])
def test_a_taken_port_is_named_with_the_variable_that_moves_it(tmp_path, variable):
    """Issue 11.3: most NATS users already run a server on 4222."""
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")}
    env |= {
        "TETHER_HOME": str(tmp_path / "home"),
        "TETHER_PORT": str(free_port()),
        "TETHER_NATS_PORT": str(free_port()),
        "TETHER_NATS_MONITOR_PORT": str(free_port()),
        "TETHER_REDIS_PORT": str(free_port()),
    }
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", int(env[variable])))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "cli.main", "up"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1
    assert f"port {env[variable]} is taken" in done.stderr and variable in done.stderr
    assert "eyJ" not in done.stdout


@pytest.mark.parametrize(
    "variable, value", [("TETHER_PORT", "http"), ("TETHER_NATS_PORT", "99999")]
)
def test_a_port_that_is_none_is_named_with_its_variable(tmp_path, variable, value):
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")}
    env |= {"TETHER_HOME": str(tmp_path / "home"), variable: value}
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "up"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"tether up: {variable}={value!r} is not a port (0-65535)" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_command_line_says_the_release_it_is(capsys):
    from cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert (stopped.value.code, capsys.readouterr().out) == (
        0, f"tether {project['project']['version']}\n"
    )  # fmt: skip


@pytest.mark.parametrize("minutes", ["0", "-5", "an hour"])
def test_outbox_refuses_a_span_that_is_no_minutes(minutes, capsys):
    from cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["outbox", "--minutes", minutes])
    assert stopped.value.code == 2
    assert f"{minutes!r} is not a number of minutes (1 or more)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command, missing",
    [
        (["token", "--org", "acme", "--user", "acme/ada"], "jwt.key"),
        (["account", "created", "acme/ada"], "credentials.json"),
        (["audit", "verify", "--org", "acme"], "credentials.json"),
        (["dead"], "credentials.json"),
        (["outbox"], "credentials.json"),
    ],
)
def test_a_command_with_no_state_where_it_looks_makes_none(
    tmp_path, monkeypatch, capsys, command, missing
):
    """Made afresh, the state would match nothing running: a token no gateway takes, an
    operator's password the bus refuses, named as the wrong password rather than the wrong
    TETHER_HOME."""
    from cli.main import main

    home = tmp_path / "not-made"
    monkeypatch.setenv("TETHER_HOME", str(home))
    monkeypatch.setenv("NATS_URL", "nats://127.0.0.1:1")
    assert main(command) == 2
    said = capsys.readouterr()
    assert said.err == (
        f"tether: cannot read {home / missing}: No such file or directory "
        f"(TETHER_HOME={home}, which `tether up` makes)\n"
    )
    assert (said.out, home.exists()) == ("", False)


def test_a_state_directory_that_cannot_be_made_is_named(tmp_path):
    (tmp_path / "a-file").touch()
    home = tmp_path / "a-file" / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")}
    for command in ("up", "nats-config"):
        done = subprocess.run(
            [sys.executable, "-m", "cli.main", command],
            env=env | {"TETHER_HOME": str(home)}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr == f"tether: cannot make {home}: Not a directory (TETHER_HOME={home})\n"


@pytest.mark.parametrize("flag", ["--port", "--monitor-port"])
def test_nats_config_takes_only_a_port(tmp_path, monkeypatch, capsys, flag):
    """Printed, a port past 65535 is refused only when nats-server reads the config."""
    from cli.main import main

    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit) as stopped:
        main(["nats-config", flag, "99999"])
    assert stopped.value.code == 2
    assert f"argument {flag}: '99999' is not a port (0-65535)" in capsys.readouterr().err
    assert not (tmp_path / "home").exists()


def test_credentials_that_are_not_json_are_named(tmp_path, monkeypatch, capsys):
    """What a start stopped as it wrote left: each file is now written whole or not at all,
    and one from before that is not JSON is named rather than a traceback."""
    from cli.main import main

    (tmp_path / "credentials.json").write_text("")
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    monkeypatch.setenv("NATS_URL", "nats://127.0.0.1:1")
    assert main(["dead"]) == 2
    assert capsys.readouterr().err == (
        f"tether: {tmp_path}/credentials.json is not JSON (Expecting value: line 1 column 1 "
        f"(char 0)) (TETHER_HOME={tmp_path}, which `tether up` makes)\n"
    )


def test_a_token_key_left_empty_is_named_and_made_again(tmp_path, monkeypatch, capsys):
    """An empty key (a write cut short, before they were whole) signed nothing: `token`
    names it, and the next start writes a new one."""
    from cli.main import main

    (tmp_path / "jwt.key").write_text("")
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    assert main(["token", "--org", "acme", "--user", "acme/ada"]) == 2
    assert capsys.readouterr().err == (
        f"tether: {tmp_path}/jwt.key is empty (TETHER_HOME={tmp_path}, which `tether up` makes)\n"
    )
    assert main(["nats-config"]) == 0
    assert len((tmp_path / "jwt.key").read_text()) == 64


@pytest.mark.parametrize(
    ("act", "named"),
    [
        ("agent:acme/bob", "agent:acme/bob is acme/bob's own agent; it cannot act for acme/ada"),
        ("agent:globex", "agent:globex acts in globex, not acme"),
        ("", 'the token\'s act claim must be {"sub": <agent>}'),
        ("a\tb", "the token's claims are not valid: Expected printable text"),
    ],
    ids=["another-persons-agent", "another-orgs-agent", "empty", "control-character"],
)
def test_a_token_the_gateway_would_refuse_is_not_minted(tmp_path, monkeypatch, capsys, act, named):
    """`--act` was taken as it came: the token printed was refused 401 or 403 by every
    gateway, far from the command that made it."""
    from cli.main import main
    from libs.stack.up import ROLES

    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    Home().ensure(ROLES)
    assert main(["token", "--org", "acme", "--user", "acme/ada", "--act", act]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.startswith("tether token: the gateway would refuse it: ")
    assert named in said.err
    assert main(["token", "--org", "acme", "--user", "acme/ada", "--act", "agent:acme/ada"]) == 0
