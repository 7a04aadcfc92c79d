"""A soak (issue 16): `tether up` on one node under ten minutes of mixed load through the
gateway, every process watched.

The load, each part in a loop of its own:
- messages: Ada posts to a room, each keyed;
- windows: Fay's level is send with a one-minute window; her agent routes a reply to a
  message of hers every few seconds (over the bus, as the agents service does), and every
  third window she stops, so windows open and close all along;
- drafts: Gil's agent writes his layer, which is held as a draft; Gil keeps one and
  discards the next;
- asks: Ada's delegate acts over the grant's per-act limit, which asks her; she approves
  one and declines the next;
- layer writes: Bob renames an app in his layer, at its current version.

Every 10 s each process's resident memory, open descriptors and (from its metrics) asyncio
tasks are read, with the NATS server's client connections. After a warm-up, the memory of
every process must stay within 10% of where the warm-up left it; once the load has stopped
and the last window has fired, the tasks, descriptors and connections must be back where
they were before it began. "Before" is read once every part has run for a few seconds and
all is idle again, since a process makes a few things it keeps (a shared subscription) at
its first request of a kind. Any answer but the one each request asks for is an error. Every
window not stopped must have sent exactly once, and none stopped has sent.

    .venv/bin/python -m bench.soak             # 600 s
    .venv/bin/python -m bench.soak 120 30      # seconds of load, seconds of warm-up
"""

import asyncio
import json
import re
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import aiohttp
import msgspec
import nats
from redis import Redis

from bench.failover import AGENT, ORG, Cluster, act_of, issue_grant, start, window_send
from libs.contracts.ladder import ROUTE, SEND_MEANS
from libs.contracts.permissions import inbox_prefix

SAMPLE_S = 10.0
PRIME_S = 5.0
WINDOW_EVERY_S = 3.0
FLAT = 1.10  # memory may grow 10% past the warm-up, no more
# The stores grow with what the load stores (ten minutes of messages, a day's idempotency
# keys): their memory is reported, not held flat.
SERVERS = {"nats-server", "redis-server"}


@dataclass
class Soak:
    c: Cluster
    http: aiohttp.ClientSession
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    answers: Counter = field(default_factory=Counter)  # (what, status)
    errors: Counter = field(default_factory=Counter)  # (what, status, problem type)
    windows: dict[int, str] = field(default_factory=dict)  # seq asked → window id
    stopped: set[int] = field(default_factory=set)
    due: list[str] = field(default_factory=list)
    turns: Counter = field(default_factory=Counter)  # each part's next turn, kept across runs

    def turn(self, part: str) -> int:
        self.turns[part] += 1
        return self.turns[part] - 1

    async def call(self, what: str, method: str, path: str, user: str, want: int, **kw) -> dict:
        """One request, as `user` (`user~agent` for their own agent, `user~delegate` for the
        grant's), counted an error unless answered `want`."""
        person, _, acting = user.partition("~")
        act = {"agent": f"agent:{ORG}/{person}", "delegate": AGENT}.get(acting)
        claims = {"act": act, "roles": ("mod:write",)} if act else {}
        headers = self.c.auth(f"{ORG}/{person}", **claims) | kw.pop("headers", {})
        async with self.http.request(method, path, headers=headers, **kw) as r:
            body = await r.json(content_type=None) if r.status != 204 else {}
        self.answers[(what, r.status)] += 1
        if r.status != want:
            self.errors[(what, r.status, str((body or {}).get("type", "")))] += 1
        return body or {}

    async def messages(self, room: str) -> None:
        while not self.stop.is_set():
            n = self.turn("messages")
            await self.call(
                "message", "POST", f"/v1/rooms/{room}/messages", "ada", 201,
                json={"text": f"m{n}"}, headers={"Idempotency-Key": f"soak-m{n}"},
            )  # fmt: skip

    async def windows_(self, room: str, agents: nats.NATS) -> None:
        while not self.stop.is_set():
            n = self.turn("windows")
            asked = await self.call(
                "window ask", "POST", f"/v1/rooms/{room}/messages", "fay", 201,
                json={"text": f"ask {n}"},
            )  # fmt: skip
            route = {"org": ORG, "person": f"{ORG}/fay", "room": room, "reply_to": asked["seq"],
                     "candidates": [f"reply to {asked['seq']}"]}  # fmt: skip
            reply = await agents.request(
                ROUTE.published_by("agents"), msgspec.json.encode(route), timeout=30
            )
            routed = msgspec.json.decode(reply.data)
            self.windows[asked["seq"]] = routed["window"]
            self.due.append(routed["due_at"])
            if n % 3 == 2:
                await self.call(
                    "window stop", "POST", f"/v1/windows/{routed['window']}/stop", "fay", 200,
                    json={},
                )  # fmt: skip
                self.stopped.add(asked["seq"])
            await asyncio.sleep(WINDOW_EVERY_S)

    async def drafts(self) -> None:
        while not self.stop.is_set():
            n = self.turn("drafts")
            op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"D{n}"}
            layer = await self.call("draft base", "GET", "/v1/mod/layers/user", "gil", 200)
            held = await self.call(
                "draft", "POST", "/v1/mod/layers/user", "gil~agent", 202,
                json={"base": layer["version"], "ops": [op]},
            )  # fmt: skip
            draft = (held.get("draft") or {}).get("id")
            if draft is None:
                continue
            if n % 2 == 0:
                path = f"/v1/mod/drafts/{draft}/commit"
                await self.call("keep", "POST", path, "gil", 200, json={})
            else:
                await self.call("discard", "DELETE", f"/v1/mod/drafts/{draft}", "gil", 204)

    async def asks(self, grant: str) -> None:
        while not self.stop.is_set():
            n = self.turn("asks")
            envelope = act_of(140)  # over the per-act limit; each its own act, asked once
            envelope["context"]["purpose"] = f"groceries {n}"
            outcome = await self.call(
                "ask", "POST", f"/v1/poa/grants/{grant}/acts", "ada~delegate", 202,
                json={"envelope": envelope},
            )  # fmt: skip
            if (ask := outcome.get("ask")) is not None:
                choice = "approve" if n % 2 == 0 else "decline"
                await self.call(
                    "answer", "POST", f"/v1/poa/asks/{ask}/answer", "ada", 200,
                    json={"answer": choice},
                )  # fmt: skip

    async def layer(self) -> None:
        while not self.stop.is_set():
            n = self.turn("layer")
            layer = await self.call("layer read", "GET", "/v1/mod/layers/user", "bob", 200)
            op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"B{n}"}
            await self.call(
                "layer write", "POST", "/v1/mod/layers/user", "bob", 200,
                json={"base": layer["version"], "ops": [op]},
            )  # fmt: skip


@dataclass
class Sample:
    at: float
    rss_kb: dict[str, int]
    fds: dict[str, int]
    tasks: dict[str, int]
    connections: int
    stored: tuple[int, int, int]  # what the stores hold: JetStream messages and bytes, Redis keys


def processes(c: Cluster) -> dict[str, int]:
    """Every process of the system by name: `tether up`'s children and the servers."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) != c.proc.pid:
            continue
        args = [a.decode() for a in cmdline if a]
        name = args[args.index("-m") + 1] if "-m" in args else Path(args[0].split()[0]).name
        found[name.removeprefix("services.").removesuffix(".main")] = int(proc.name)
    return found


def rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]


def tasks(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return int(float(re.search(r"^tether_tasks (\S+)$", text, re.M).group(1)))  # type: ignore[union-attr]


def sample(c: Cluster, metrics: dict[str, int]) -> Sample:
    procs = processes(c)
    monitor = f"http://127.0.0.1:{c.monitors[0]}"
    with urllib.request.urlopen(f"{monitor}/connz", timeout=5) as r:
        connections = json.load(r)["num_connections"]
    with urllib.request.urlopen(f"{monitor}/jsz", timeout=5) as r:
        jsz = json.load(r)
    with Redis.from_url(c.redis_url) as redis:
        keys = redis.dbsize()
    return Sample(
        at=time.monotonic(),
        rss_kb={name: rss_kb(pid) for name, pid in procs.items()},
        fds={name: len(list(Path(f"/proc/{pid}/fd").iterdir())) for name, pid in procs.items()},
        tasks={name: tasks(port) for name, port in metrics.items()},
        connections=connections,
        stored=(jsz["messages"], jsz["storage"] + jsz["memory"], keys),
    )


async def soak(c: Cluster, metrics: dict[str, int], seconds: float, warm_up: float) -> dict:
    samples: list[Sample] = []
    async with _client(c) as http:
        load = Soak(c, http)
        fay = c.auth(f"{ORG}/fay")
        send = {"level": "send", "acknowledge": SEND_MEANS}
        for path, body in (("/v1/ladder/window", {"window": "1m"}), ("/v1/ladder", send)):
            async with http.put(path, json=body, headers=fay) as r:
                assert r.status == 200, await r.text()
        rooms = []
        for who in ("ada", "fay"):
            async with http.post("/v1/rooms", json={"title": "soak"},
                                 headers=c.auth(f"{ORG}/{who}")) as r:  # fmt: skip
                rooms.append((await r.json())["id"])
        grant = await issue_grant(c, http)
        # Every part runs for a moment first, and the baseline is read once all is idle
        # again, with no client connected: a process makes some things it keeps for good
        # (a shared subscription) at its first request of a kind, which is no leak.
        agents = await _agents(c)
        priming = [asyncio.create_task(p) for p in _parts(load, rooms, agents, grant)]
        await asyncio.sleep(PRIME_S)
        load.stop.set()
        await asyncio.gather(*priming)
        load.stop.clear()
        await agents.close()
    await asyncio.sleep(SAMPLE_S)
    before = sample(c, metrics)
    async with _client(c) as http:
        load.http = http
        agents = await _agents(c)
        started = time.monotonic()
        running = [asyncio.create_task(p) for p in _parts(load, rooms, agents, grant)]
        while time.monotonic() - started < seconds:
            await asyncio.sleep(SAMPLE_S)
            samples.append(sample(c, metrics))
            done = [t for t in running if t.done()]
            for t in done:
                t.result()  # a part that stopped raises why
        load.stop.set()
        await asyncio.gather(*running)
        # Every window ends, then the system is idle again.
        last_due = max(datetime.fromisoformat(d) for d in load.due)
        await asyncio.sleep(max(0.0, last_due.timestamp() - time.time()) + 15)
        sent = await sent_windows(load, rooms[1])
        await agents.close()
    await asyncio.sleep(SAMPLE_S)
    after = sample(c, metrics)
    warm = [s for s in samples if s.at - started >= warm_up]
    return {"load": load, "before": before, "warm": warm, "after": after, "sent": sent}


def _client(c: Cluster) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(c.url, connector=aiohttp.TCPConnector(limit=0))


def _parts(load: Soak, rooms: list[str], agents: nats.NATS, grant: str) -> list:
    return [load.messages(rooms[0]), load.windows_(rooms[1], agents), load.drafts(),
            load.asks(grant), load.layer()]  # fmt: skip


async def _agents(c: Cluster) -> nats.NATS:
    """A connection as the agents service, which routes Fay's replies as it would."""
    return await nats.connect(
        c.nats_url,
        user="agents",
        password=json.loads((c.home / "credentials.json").read_text())["agents"],
        inbox_prefix=inbox_prefix("agents"),
    )


async def sent_windows(load: Soak, room: str) -> Counter:
    found, after = [], 0
    while True:
        page = await load.call(
            "history", "GET", f"/v1/rooms/{room}/messages?after={after}&limit=200", "fay", 200
        )
        found += page["messages"]
        if page["next"] is None:
            return Counter(m.get("reply_to") for m in found if window_send(m))
        after = page["next"]


def report(result: dict, seconds: float, warm_up: float) -> bool:
    load, before, warm, after = result["load"], result["before"], result["warm"], result["after"]
    base = warm[0]
    print(f"soak: {seconds:.0f} s of load, warm-up {warm_up:.0f} s, "
          f"{sum(load.answers.values())} requests")  # fmt: skip
    for (what, status), n in sorted(load.answers.items()):
        print(f"  {what:12s} {status} x {n}")
    print(f"errors: {dict(load.errors) or 0}")
    print(f"{'process':12s} {'RSS after warm-up':>18s} {'max after':>10s} {'growth':>7s} "
          f"{'fds before/after':>17s} {'tasks before/after':>19s}")  # fmt: skip
    flat = True
    for name in sorted(base.rss_kb):
        peak = max(s.rss_kb[name] for s in warm)
        growth = peak / base.rss_kb[name] - 1
        flat &= name in SERVERS or peak <= base.rss_kb[name] * FLAT
        tasks = f"{before.tasks.get(name, '-')}/{after.tasks.get(name, '-')}"
        fds = f"{before.fds[name]}/{after.fds[name]}"
        print(f"{name:12s} {base.rss_kb[name] / 1024:15.1f} MB {peak / 1024:7.1f} MB "
              f"{growth:6.1%} {fds:>17s} {tasks:>19s}")  # fmt: skip
    print(f"NATS client connections before/after: {before.connections}/{after.connections}")
    (m0, b0, k0), (m1, b1, k1) = base.stored, after.stored
    print(f"stored after warm-up / after: JetStream {m0} / {m1} messages, "
          f"{b0 / 2**20:.0f} / {b1 / 2**20:.0f} MB; Redis {k0} / {k1} keys")  # fmt: skip
    sent = result["sent"]
    fired = Counter(sent[seq] for seq in load.windows if seq not in load.stopped)
    stopped_sent = sum(sent[seq] for seq in load.stopped)
    print(f"windows: {len(load.windows)} opened, {len(load.stopped)} stopped; of the others, "
          f"times sent: {dict(fired)}; stopped ones sent: {stopped_sent}")  # fmt: skip
    no_leak = (
        after.connections == before.connections
        and all(after.tasks[n] <= before.tasks[n] for n in before.tasks)
        and all(after.fds[n] <= before.fds[n] + 2 for n in before.fds)
    )
    once = set(fired) == {1} and stopped_sent == 0
    ok = flat and no_leak and once and not load.errors
    print(f"tether's processes' memory flat within 10%: {flat}; no leak: {no_leak}; "
          f"windows once: {once}; no errors: {not load.errors}")  # fmt: skip
    return ok


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 600.0
    warm_up = float(sys.argv[2]) if len(sys.argv) > 2 else 120.0
    with tempfile.TemporaryDirectory() as home:
        c = start(Path(home), nodes=1, metrics=True)
        try:
            result = asyncio.run(soak(c, c.metrics, seconds, warm_up))
        finally:
            c.stop()
    return 0 if report(result, seconds, warm_up) else 1


if __name__ == "__main__":
    sys.exit(main())
