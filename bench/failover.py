"""Failover on the cluster shape (issue 15): `tether up --cluster 3` under a mixed load
through the gateway, with windows pending. The NATS node leading the most streams is
killed (SIGKILL), then one replica each of the gateway, the scheduler, the ladder and
rooms. The process manager starts each again, as Kubernetes would.

What a client saw is counted: every answer's status, when each failure came, and what was
acknowledged. `check` then reads the system back. Nothing acknowledged may be lost, no
message may be stored twice, no act charged twice, and every window must fire exactly
once. A request may fail only with a 503 or 504 problem, never a 500, and none may hang.

    .venv/bin/python -m bench.failover     # prints the failover figures
"""

import asyncio
import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import msgspec
import nats

from bench.poa_bus import BODY as POA_BODY
from bench.poa_bus import CASE as POA_CASE
from libs.contracts import SERVICES
from libs.contracts.ladder import ROUTE, SEND_MEANS
from libs.contracts.permissions import inbox_prefix
from libs.stack.servers import free_port
from services.gateway.tokens import mint

ORG = "acme"
WORKERS, WINDOWS = 6, 20
HANG_S = 30.0  # an answer slower than this is a hang
RETRY_FOR_S = 90.0  # how long a client retries a transient failure
TRANSIENT = {502, 503, 504}
AGENT = "urn:example:agent:a_456"  # the official grant's delegate


@dataclass
class Cluster:
    proc: subprocess.Popen[str]
    url: str
    home: Path
    monitors: list[int]
    nats_url: str
    metrics: dict[str, int] = field(default_factory=dict)  # process → its metrics port
    redis_url: str = ""

    def key(self) -> str:
        return (self.home / "jwt.key").read_text().strip()

    def auth(self, user: str, **claims: object) -> dict[str, str]:
        token = mint(self.key(), org=ORG, user=user, now=int(time.time()), **claims)
        return {"Authorization": f"Bearer {token}"}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(home: Path, nodes: int = 3, *, metrics: bool = False) -> Cluster:
    """`tether up --cluster <nodes>` on free ports, once it says it is up; with `metrics`,
    each process's metrics on a port of its own (one replica each: one node)."""
    port, nats_port, monitor, route = (free_port(nodes) for _ in range(4))
    metrics_base = free_port(len(SERVICES) + 1) if metrics else 0  # and the gateway's
    redis_port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")} | {
        "TETHER_HOME": str(home),
        "TETHER_PORT": str(port),
        "TETHER_NATS_PORT": str(nats_port),
        "TETHER_NATS_MONITOR_PORT": str(monitor),
        "TETHER_NATS_CLUSTER_PORT": str(route),
        "TETHER_REDIS_PORT": str(redis_port),
        "TETHER_METRICS_BASE_PORT": str(metrics_base),
        "TETHER_RATE_LIMIT": "0",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "up", "--cluster", str(nodes)],
        env=env, stdout=subprocess.PIPE, stderr=(home / "up.log").open("w"), text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("eyJ"):
            break
        if proc.poll() is not None:
            raise RuntimeError(f"tether up --cluster {nodes} exited while starting")
    else:
        raise RuntimeError(f"tether up --cluster {nodes} not up after 180 s")
    nats_url = ",".join(f"nats://127.0.0.1:{nats_port + i}" for i in range(nodes))
    monitors = [monitor + i for i in range(nodes)]
    ports = {s.name: metrics_base + i for i, s in enumerate(SERVICES)} if metrics else {}
    ports = ports | ({"gateway": metrics_base + len(SERVICES)} if metrics else {})
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    return Cluster(proc, f"http://127.0.0.1:{port}", home, monitors, nats_url, ports, redis_url)


@dataclass
class Seen:
    """What the clients saw."""

    statuses: Counter = field(default_factory=Counter)
    problems: Counter = field(default_factory=Counter)  # (method, last segment, status, type)
    # (when the client saw it, what, the request and its problem): a request sent before
    # the kill and failed by it is the failover's, so each is timed at its answer.
    failures: list[tuple[float, str, str]] = field(default_factory=list)
    hangs: int = 0
    messages: set[str] = field(default_factory=set)  # texts acknowledged
    versions: dict[int, str] = field(default_factory=dict)  # layer version → its title
    windows: dict[int, str] = field(default_factory=dict)  # answered seq → its due_at
    acts: int = 0  # $1 acts acknowledged ALLOW
    acts_unanswered: int = 0  # acts still failing when their client gave up
    grant: str = ""
    killed_at: float = 0.0
    requests: int = 0
    node: str = ""  # the NATS node killed
    room: str = ""  # where the load's messages went
    windows_room: str = ""


class Load:
    def __init__(self, cluster: Cluster, http: aiohttp.ClientSession, seen: Seen) -> None:
        self.c, self.http, self.seen = cluster, http, seen
        self.stop = asyncio.Event()

    async def ask(self, method: str, path: str, headers: dict, **kw) -> tuple[int, dict]:
        """One request, retried on a transient failure with the same key, until answered."""
        give_up = time.monotonic() + RETRY_FOR_S
        last = path.split("?")[0].rsplit("/", 1)[-1]
        route = f"{method} .../{last}"
        while True:
            self.seen.requests += 1
            try:
                async with self.http.request(
                    method, path, headers=headers, timeout=aiohttp.ClientTimeout(total=HANG_S), **kw
                ) as r:
                    body = await r.json(content_type=None) if r.content_length != 0 else {}
                    status = r.status
            except TimeoutError:
                self.seen.hangs += 1
                self.seen.failures.append((time.monotonic(), "hang", route))
                status, body = 0, {}
            except aiohttp.ClientError as exc:
                self.seen.failures.append((time.monotonic(), type(exc).__name__, route))
                status, body = 0, {}
            self.seen.statuses[status] += 1
            problem = str(body.get("type", ""))
            if status >= 400:
                self.seen.problems[(method, last, status, problem)] += 1
            if status in TRANSIENT:
                self.seen.failures.append((time.monotonic(), str(status), f"{route} {problem}"))
            in_use = status == 409 and str(body.get("type", "")).endswith("idempotency-key-in-use")
            if status not in TRANSIENT and status != 0 and not in_use:
                return status, body
            if time.monotonic() > give_up:
                return status, body
            await asyncio.sleep(0.25)

    async def warm(self, room: str, grant: str) -> None:
        """A message in the load's room, a write of Bob's layer and an act of $0 on the
        grant, each until answered: the first of each makes or first reads what the load
        then uses (the room's subjects, the layer's key, the grant's ledger just written),
        which a cold cluster on a shared machine can take longer to answer than the gateway
        waits (504), or to copy to the replica read than a read waits (503 `catching-up`,
        seen once on the first act of a full `make test`)."""
        ada, bob = self.c.auth(f"{ORG}/ada"), self.c.auth(f"{ORG}/bob")
        said = ada | {"Idempotency-Key": "warm"}
        await self.ask("POST", f"/v1/rooms/{room}/messages", said, json={"text": "warm"})
        _, found = await self.ask("GET", "/v1/mod/layers/user", bob)
        op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": "Chat"}
        body = {"base": found["version"], "ops": [op]}
        await self.ask("POST", "/v1/mod/layers/user", bob, json=body)
        agent = self.c.auth(f"{ORG}/ada", act=AGENT) | {"Idempotency-Key": "warm"}
        acts = f"/v1/poa/grants/{grant}/acts"
        await self.ask("POST", acts, agent, json={"envelope": act_of(0)})

    async def messages(self, worker: int, room: str) -> None:
        ada = self.c.auth(f"{ORG}/ada")
        n = 0
        while not self.stop.is_set():
            text = f"w{worker}-m{n}"
            headers = ada | {"Idempotency-Key": text}
            status, _ = await self.ask(
                "POST", f"/v1/rooms/{room}/messages", headers, json={"text": text}
            )
            if status == 201:
                self.seen.messages.add(text)
            n += 1

    async def layer(self, worker: int) -> None:
        bob = self.c.auth(f"{ORG}/bob")
        n = 0
        while not self.stop.is_set():
            status, found = await self.ask("GET", "/v1/mod/layers/user", bob)
            if status != 200:
                continue
            title = f"Chat {worker}-{n}"
            op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": title}
            status, written = await self.ask(
                "POST", "/v1/mod/layers/user", bob, json={"base": found["version"], "ops": [op]}
            )
            if status == 200:
                self.seen.versions[written["version"]] = title
            n += 1

    async def acts(self, worker: int, grant: str) -> None:
        """Keyed $1 acts on Ada's grant by her agent, each sent until answered."""
        agent = self.c.auth(f"{ORG}/ada", act=AGENT)
        n = 0
        while not self.stop.is_set():
            headers = agent | {"Idempotency-Key": f"act-{worker}-{n}"}
            status, outcome = await self.ask(
                "POST", f"/v1/poa/grants/{grant}/acts", headers, json={"envelope": act_of(1)}
            )
            if status == 200 and outcome["decision"]["decision"] == "ALLOW":
                self.seen.acts += 1
            else:  # still failing, or its key still in flight, when the client gave up
                self.seen.acts_unanswered += 1
            n += 1

    async def verify(self) -> None:
        """PoA decisions: stateless, so they measure availability alone."""
        ada = self.c.auth(f"{ORG}/ada") | {"Content-Type": "application/json"}
        while not self.stop.is_set():
            await self.ask("POST", "/v1/poa/verify", ada, data=POA_BODY)


def act_of(amount: int) -> dict:
    """The official purchase envelope, for `amount` USD."""
    envelope = copy.deepcopy(POA_CASE["envelope"])
    envelope["invocation"]["arguments"]["amount"] = amount
    return envelope


def roomy_grant(person: str) -> dict:
    """The official grant in `person`'s name, valid today, with room for every act of a
    load."""
    grant = copy.deepcopy(POA_CASE["grant"])
    grant["principal"]["sub"] = person
    grant["defaults"]["max_binding_per_day"] = 10**6
    grant["defaults"]["limits"]["per_month_usd"] = 10**9
    buy = next(a for a in grant["authorities"] if a["act_id"] == "shop.buy")
    buy["limits"]["monthly_total_lte"] = 10**9
    today = datetime.now(UTC).date()
    grant["validity"] = {"not_before": (today - timedelta(days=1)).isoformat(),
                         "expires": (today + timedelta(days=5)).isoformat()}  # fmt: skip
    return grant


async def issue_grant(cluster: Cluster, http: aiohttp.ClientSession) -> str:
    """Ada's roomy grant."""
    grant = roomy_grant(f"{ORG}/ada")
    ada = cluster.auth(f"{ORG}/ada")
    async with http.post("/v1/poa/grants", json={"grant": grant}, headers=ada) as r:
        assert r.status == 201, await r.text()
        return (await r.json())["id"]


async def open_windows(cluster: Cluster, http: aiohttp.ClientSession, seen: Seen) -> str:
    """Fay's level is send with a one-minute window; her agent routes a reply to each of
    WINDOWS messages of hers (over the bus, as the agents service does), and each reply
    waits out a window, to be sent once. Her room."""
    fay = cluster.auth(f"{ORG}/fay")
    async with http.put("/v1/ladder/window", json={"window": "1m"}, headers=fay) as r:
        assert r.status == 200, await r.text()
    body = {"level": "send", "acknowledge": SEND_MEANS}
    async with http.put("/v1/ladder", json=body, headers=fay) as r:
        assert r.status == 200, await r.text()
    async with http.post("/v1/rooms", json={"title": "windows"}, headers=fay) as r:
        room = (await r.json())["id"]
    agents = await nats.connect(
        cluster.nats_url.split(","),
        user="agents",
        password=json.loads((cluster.home / "credentials.json").read_text())["agents"],
        inbox_prefix=inbox_prefix("agents"),
    )
    try:
        for i in range(WINDOWS):
            async with http.post(
                f"/v1/rooms/{room}/messages", json={"text": f"ask {i}"}, headers=fay
            ) as r:
                seq = (await r.json())["seq"]
            ask = {"org": ORG, "person": f"{ORG}/fay", "room": room, "reply_to": seq,
                   "candidates": [f"reply to {seq}"]}  # fmt: skip
            reply = await agents.request(
                ROUTE.published_by("agents"), msgspec.json.encode(ask), timeout=30
            )
            routed = msgspec.json.decode(reply.data)
            assert routed.get("due_at"), routed
            seen.windows[seq] = routed["due_at"]
    finally:
        await agents.close()
    return room


def leader_node(cluster: Cluster) -> tuple[str, int]:
    """The node leading the most streams, and its pid."""
    leads: Counter = Counter()
    for monitor in cluster.monitors:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{monitor}/jsz?streams=true", timeout=2
            ) as r:
                jsz = json.load(r)
        except OSError:
            continue
        for account in jsz.get("account_details", []):
            for stream in account.get("stream_detail", []):
                leader = (stream.get("cluster") or {}).get("leader")
                if leader:
                    leads[leader] += 1
        break
    name = leads.most_common(1)[0][0]
    return name, _pid(f"{cluster.home}/nats/{name}.json")


def _pid(needle: str) -> int:
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if needle in cmdline:
            return int(proc.name)
    raise LookupError(needle)


def replica_pid(cluster: Cluster, module: str) -> int:
    """One running process of `module` under this cluster's `tether up`."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat[1]) == cluster.proc.pid and f"-m {module}" in cmdline:
            return int(proc.name)
    raise LookupError(module)


async def run(cluster: Cluster, *, seconds: float = 25.0, kill_after: float = 5.0) -> Seen:
    """The load, the faults after `kill_after` seconds, and the windows' fires awaited."""
    seen = Seen()
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(cluster.url, connector=connector) as http:
        ada = cluster.auth(f"{ORG}/ada")
        async with http.post("/v1/rooms", json={"title": "load"}, headers=ada) as r:
            room = (await r.json())["id"]
        windows_room = await open_windows(cluster, http, seen)
        seen.grant = await issue_grant(cluster, http)
        # Warmed apart from what is measured: a failure counts from when the load begins.
        await Load(cluster, http, Seen()).warm(room, seen.grant)
        load = Load(cluster, http, seen)
        tasks = [asyncio.create_task(load.messages(i, room)) for i in range(WORKERS)]
        tasks += [asyncio.create_task(load.layer(i)) for i in range(2)]
        tasks += [asyncio.create_task(load.verify()) for i in range(2)]
        tasks += [asyncio.create_task(load.acts(i, seen.grant)) for i in range(2)]
        await asyncio.sleep(kill_after)
        node, pid = leader_node(cluster)
        seen.killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        for module in ("services.gateway.main", "services.scheduler.main",
                       "services.ladder.main", "services.rooms.main"):  # fmt: skip
            os.kill(replica_pid(cluster, module), signal.SIGKILL)
        await asyncio.sleep(seconds - kill_after)
        load.stop.set()
        await asyncio.gather(*tasks)
        seen.room, seen.windows_room, seen.node = room, windows_room, node
    return seen


async def read_back(cluster: Cluster, seen: Seen) -> dict[str, list[dict]]:
    """The system as stored once every window has sent (or 90 s past the last one's due
    time, when one has not): each room's messages, the layer's versions and what the
    grant has spent, read with retries as any client would."""
    due = max(datetime.fromisoformat(d) for d in seen.windows.values())
    await asyncio.sleep(max(0.0, due.timestamp() - time.time()))
    async with aiohttp.ClientSession(cluster.url) as http:
        load = Load(cluster, http, Seen())
        ada, fay = cluster.auth(f"{ORG}/ada"), cluster.auth(f"{ORG}/fay")
        bob = cluster.auth(f"{ORG}/bob")
        give_up = time.monotonic() + 90
        while True:
            windows = await _all_messages(load, seen.windows_room, fay)
            sent = {m.get("reply_to") for m in windows if window_send(m)}
            if set(seen.windows) <= sent or time.monotonic() > give_up:
                break
            await asyncio.sleep(1)
        _, versions = await load.ask("GET", "/v1/mod/layers/user/versions", bob)
        # An act of $0 answers with the month spent so far, and charges nothing.
        _, last = await load.ask(
            "POST",
            f"/v1/poa/grants/{seen.grant}/acts",
            cluster.auth(f"{ORG}/ada", act=AGENT),
            json={"envelope": act_of(0)},
        )
        return {
            "messages": await _all_messages(load, seen.room, ada),
            "windows": windows,
            "versions": versions["versions"],
            "spent_usd": last["spent_month_usd"],
        }


def window_send(message: dict) -> bool:
    """A window's send, not the notice that it is waiting."""
    return message["author_kind"] == "agent" and not message.get("notice")


async def _all_messages(load: Load, room: str, headers: dict) -> list[dict]:
    found, after = [], 0
    while True:
        status, page = await load.ask(
            "GET", f"/v1/rooms/{room}/messages?after={after}&limit=200", headers
        )
        assert status == 200, page
        found += page["messages"]
        if page["next"] is None:
            return found
        after = page["next"]


def failover_s(seen: Seen) -> float:
    """From the kill to the last failure a client saw."""
    after = [t for t, _, _ in seen.failures if t >= seen.killed_at - 1]
    return max(after) - seen.killed_at if after else 0.0


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        cluster = start(Path(home))
        try:
            seen = asyncio.run(run(cluster))
            stored = asyncio.run(read_back(cluster, seen))
        finally:
            cluster.stop()
    texts = Counter(m["text"] for m in stored["messages"])
    print(f"killed {seen.node} (it led the most streams), then one replica each of the "
          "gateway, scheduler, ladder and rooms")  # fmt: skip
    print(f"requests {seen.requests}, statuses {dict(seen.statuses)}, hangs {seen.hangs}")
    for (method, route, status, kind), n in seen.problems.most_common():
        print(f"  {n:6d} {status} {method} .../{route} {kind}")
    print(f"failures seen: {len(seen.failures)}, the last {failover_s(seen):.1f} s after the kill")
    print(f"messages acknowledged {len(seen.messages)}, lost {len(seen.messages - set(texts))}, "
          f"stored twice {sum(1 for n in texts.values() if n > 1)}")  # fmt: skip
    sent = Counter(m.get("reply_to") for m in stored["windows"] if window_send(m))
    fired = Counter(sent[seq] for seq in seen.windows)
    print(f"windows pending through the faults {len(seen.windows)}, fired: {dict(fired)} "
          "(times fired: windows)")  # fmt: skip
    print(f"layer writes acknowledged {len(seen.versions)}")
    print(f"$1 acts acknowledged {seen.acts}, unanswered {seen.acts_unanswered}, "
          f"charged ${stored['spent_usd']}")  # fmt: skip


if __name__ == "__main__":
    main()
