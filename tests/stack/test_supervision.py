"""Issue 11.2: `tether up` supervises its children. Each service, and the gateway, killed
with SIGKILL in turn while a send waits out its window: each is started again, /readyz is
green again, and the window sends its message exactly once."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from libs.contracts import SERVICES
from libs.contracts.ladder import SEND_MEANS
from libs.stack.supervise import pause
from libs.stack.up import ready
from tests.stack.test_up import _children, up  # noqa: F401 (a fixture)


def _call(method: str, url: str, token: str, body: object = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)
    except OSError:
        return 0, {}


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)
    return found


def _token(env: dict, user: str) -> str:
    argv = [sys.executable, "-m", "cli.main", "token", "--org", "acme", "--user", user]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout.strip()


def _pid_of(parent: int, module: str) -> int | None:
    for pid in _children(parent):
        try:
            if module in Path(f"/proc/{pid}/cmdline").read_bytes().decode():
                return pid
        except OSError:
            continue
    return None


def test_every_service_killed_in_turn_comes_back_and_the_window_sends_once(up):  # noqa: F811
    proc, url, env, _ = up
    ada, bob = _token(env, "acme/ada"), _token(env, "acme/bob")
    _until(lambda: _call("GET", f"{url}/v1/agents/me", ada)[0] == 200, 30, "ada's agent")
    ladder = {"level": "send", "acknowledge": SEND_MEANS}
    assert _call("PUT", f"{url}/v1/ladder", ada, ladder)[0] == 200
    assert _call("PUT", f"{url}/v1/ladder/window", ada, {"window": "1m"})[0] == 200
    _, room = _call("POST", f"{url}/v1/rooms", ada, {"title": "t", "members": ["acme/bob"]})
    asked = {"text": "Are we still on for Friday?", "to": "acme/ada"}
    assert _call("POST", f"{url}/v1/rooms/{room['id']}/messages", bob, asked)[0] == 201
    [window] = _until(
        lambda: _call("GET", f"{url}/v1/windows", ada)[1].get("windows"), 30, "a window"
    )

    for module in [f"services.{s.name}.main" for s in SERVICES] + ["services.gateway.main"]:
        before = _pid_of(proc.pid, module)
        assert before is not None, module
        os.kill(before, signal.SIGKILL)
        _until(lambda m=module, b=before: _pid_of(proc.pid, m) not in (None, b), 30, module)
        _until(lambda: ready(url), 30, f"/readyz after {module}")
    assert proc.poll() is None  # it kept going

    def sent():
        closed = _call("GET", f"{url}/v1/windows", ada)[1].get("closed", [])
        return next((w for w in closed if w["id"] == window["id"] and w["state"] == "sent"), None)

    ended = _until(sent, 120, "the window's send")
    history = _call("GET", f"{url}/v1/rooms/{room['id']}/messages", bob)[1]["messages"]
    agents = [m for m in history if m["author_kind"] == "agent"]
    assert [(m["seq"], m["text"]) for m in agents] == [(ended["sent_seq"], window["text"])]


def test_the_pause_before_a_restart_doubles_to_ten_seconds():
    assert [pause(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_child_that_keeps_crashing_stops_the_supervisor_naming_it():
    from libs.stack.supervise import RESTARTS, Supervisor

    now = [0.0]
    children = Supervisor(clock=lambda: now[0])
    crashing = children.start("crasher", [sys.executable, "-c", "raise SystemExit(3)"])
    crashing.wait()
    restarts, verdict = 0, None
    while verdict is None and now[0] < 60:
        pids = {p.pid for p in children.procs}
        for proc in children.procs:
            proc.wait()
        verdict = children.check()
        restarts += bool({p.pid for p in children.procs} - pids)
        now[0] += 0.5
    assert verdict == "crasher"
    assert restarts == RESTARTS  # started again each time but the last
