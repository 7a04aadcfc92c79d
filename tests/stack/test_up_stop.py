"""`tether up` stopped while a person's agent waits on its model: the reply it holds is
kept, and a second Ctrl-C or SIGTERM does not wait for it.

Before, every service was stopped at once and given 10 s: a reply slower than that was cut
by SIGKILL, and at the next start the message was read again and the model asked a second
time; one within it found the rooms service gone, and its draft was stored only at the next
start."""

import asyncio
import http.server
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from libs.contracts.permissions import OPERATOR
from libs.stack.home import Home
from tests.stack.test_supervision import _call, _token, _until
from tests.stack.test_up import _alive, _children, tether_up

REPLY = "Yes, Friday works."
SLOW_S = 12


class _Model(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible model on loopback that answers each ask only once let."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.asks = 0
        self.asked, self.let = threading.Event(), threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Answer(http.server.BaseHTTPRequestHandler):
    server: _Model

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.asks += 1
        self.server.asked.set()
        if not self.server.let.wait(120):
            return
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": REPLY}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def model() -> Iterator[_Model]:
    server = _Model()
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        yield server
    finally:
        server.let.set()
        server.shutdown()
        server.server_close()


def _said(log: Path) -> list[tuple[str, str]]:
    return [(r["service"], r["msg"]) for r in map(json.loads, log.read_text().splitlines())]


def _asked_of_ada(url: str, env: dict) -> tuple[str, str]:
    """Bob's question to Ada in a room of theirs, once her agent is there: (room, her token)."""
    ada, bob = _token(env, "acme/ada"), _token(env, "acme/bob")
    _until(lambda: _call("GET", f"{url}/v1/agents/me", ada)[0] == 200, 30, "ada's agent")
    status, room = _call("POST", f"{url}/v1/rooms", ada, {"title": "t", "members": ["acme/bob"]})
    assert status == 201, room
    asked = {"text": "Are we still on for Friday?", "to": "acme/ada"}
    assert _call("POST", f"{url}/v1/rooms/{room['id']}/messages", bob, asked)[0] == 201
    return room["id"], ada


async def _read_all(home: Path, nats_url: str) -> bool:
    """Whether the agents' reader has settled every event it was given."""
    nc = await nats.connect(nats_url, user=OPERATOR, password=Home(home).password(OPERATOR))
    try:
        info = await nc.jetstream().consumer_info("EVENTS", "agents")
        return info.num_pending == 0 and info.num_ack_pending == 0
    finally:
        await nc.close()


def test_a_reply_the_model_gives_while_the_system_stops_is_kept_and_asked_for_once(tmp_path, model):
    home, log = tmp_path / "home", tmp_path / "up.log"
    with tether_up(home, log, TETHER_MODEL_URL=model.url) as (proc, url, env, _):
        room, _ = _asked_of_ada(url, env)
        assert model.asked.wait(30), "the model was not asked"
        # Two at once, as a process group's SIGTERM reaches `tether up` itself and `make
        # run`, which passes it on: one ask to stop, not a second to hurry. (A SIGINT
        # with it: the kernel would merge two SIGTERMs pending together into one.)
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGINT)
        stopping = time.monotonic()
        _until(lambda: ("agents", "draining") in _said(log), 30, "the agents draining")
        # A model slower than the 10 s each process was given to stop, before.
        time.sleep(max(0.0, SLOW_S - (time.monotonic() - stopping)))
        model.let.set()
        assert proc.wait(timeout=120) == 0
    assert '"msg":"killing"' not in log.read_text()
    said = _said(log)
    # The services the reply goes to were stopped only once the agents had stopped.
    assert said.index(("agents", "stopped")) < said.index(("rooms", "draining")), said
    assert not [s for s in log.read_text().splitlines() if '"level":"error"' in s]

    again = tmp_path / "again.log"
    with tether_up(home, again, TETHER_MODEL_URL=model.url) as (proc, url, env, _):
        ada = _token(env, "acme/ada")
        nats_url = f"nats://127.0.0.1:{env['TETHER_NATS_PORT']}"
        _until(lambda: asyncio.run(_read_all(home, nats_url)), 30, "the agents reading all")
        status, listed = _call("GET", f"{url}/v1/rooms/{room}/drafts", ada)
        assert status == 200, listed
        assert [d["text"] for d in listed["drafts"]] == [REPLY]
        assert model.asks == 1  # kept at the stop, not asked again at the start


def test_a_second_signal_stops_what_is_left_at_once(tmp_path, model):
    log = tmp_path / "up.log"
    with tether_up(tmp_path / "home", log, TETHER_MODEL_URL=model.url) as (proc, url, env, _):
        _asked_of_ada(url, env)
        assert model.asked.wait(30), "the model was not asked"
        children = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        waiting = _until(lambda: _holding(log), 30, "the stop saying what holds it up")
        assert waiting["children"] == ["agents-0"], waiting
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # not the agents' grace, 75 s
        assert _alive(children) == set()


def _holding(log: Path) -> dict | None:
    """The stop's word that the agents hold it up (the gateway's stage, on a busy machine,
    may say so of the gateway first)."""
    return next(
        (
            r
            for r in map(json.loads, log.read_text().splitlines())
            if r["msg"].startswith("waiting for what they hold") and "agents-0" in r["children"]
        ),
        None,
    )
