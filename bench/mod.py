"""The mod service in its own process behind the gateway (issue 12's figures):

surface     GET /v1/mod/surface with the 15 first-party mods and 50 installed, against
            GET /v1/mod/layers/org (one KV read behind the same gateway), sequential
write       a 64-op POST /v1/mod/layers/user through the gateway, against a bare
            JetStream KV update of the same bytes (goal: at most 3x its latency)
watch       100 watchers open on one org's layer: from a write's answer to the event at
            each watcher (p99), against the same write's own latency

.venv/bin/python -m bench.mod
"""

import asyncio
import copy
import hashlib
import time

import aiohttp
import nats
import uvloop
from nats.js.api import KeyValueConfig

from bench.common import percentile, stack
from libs.contracts import codec
from libs.contracts.permissions import OPERATOR, inbox_prefix
from services.gateway.tokens import mint
from services.mod.main import first_party

ORG, INSTALLED, ROUNDS, WATCHERS, WRITES = "bench", 50, 300, 100, 50
BEHIND = ("audit", "scheduler", "ladder", "mod")  # the mod service and those it asks
MODE = {"type": "string", "enum": ["a", "b"]}
APPS = [m.id for m in first_party()]


def sixty_four_ops() -> list[dict]:
    """64 ops on 64 distinct targets of the first-party surface."""
    ops = []
    for i, name in enumerate(APPS):
        app = f"hanzo/{name}/{name}"
        ops += [
            {"op": "rename", "kind": "apps", "id": app, "title": f"{name.title()} {i}"},
            {"op": "move", "kind": "apps", "id": app, "index": i},
            {"op": "hide" if i % 2 else "show", "kind": "apps", "id": app},
        ]
    cmds = [(m.id, c.id) for m in first_party() for c in m.contributes.commands]
    ops += [
        {"op": "rename", "kind": "commands", "id": f"hanzo/{m}/{c}", "title": f"Do {c}"}
        for m, c in cmds
    ]
    return ops[:64]


def _manifest(i: int) -> dict:
    name = f"third-{i}"
    digest = "sha256:" + hashlib.sha256(name.encode()).hexdigest()
    return {
        "id": name,
        "publisher": "acme",
        "title": f"Third {i}",
        "version": "1.0.0",
        "contributes": {
            "apps": [{"id": name, "title": f"Third {i}", "slots": ["side"]}],
            "views": [{"id": "main", "title": "Main", "app": name, "route": "/main"}],
            "commands": [{"id": "go", "title": "Go"}, {"id": "stop", "title": "Stop"}],
            "settings": [
                {
                    "id": "mode",
                    "title": "Mode",
                    "scope": "user",
                    "schema": {"type": "string", "enum": ["a", "b"]},
                }
            ],
        },
        "uses": ["hanzo/chat#composer"],
        "permissions": ["todo:read"],
        "backend": {"kind": "wasm", "module": "b.wasm"},
        "build": {
            "repo": f"acme/{name}",
            "commit": hashlib.sha1(name.encode()).hexdigest(),
            "lockfile": digest,
            "toolchain": digest,
            "digest": digest,
        },
    }


class Bench:
    def __init__(self, base: str, key: str, nats_url: str, passwords: dict[str, str]) -> None:
        self.base, self.key, self.nats_url, self.passwords = base, key, nats_url, passwords

    def auth(self, user: str, **claims: object) -> dict[str, str]:
        token = mint(self.key, org=ORG, user=user, now=int(time.time()), **claims)
        return {"Authorization": f"Bearer {token}"}

    async def run(self) -> dict[str, dict[str, list[float]]]:
        # Watchers hold their connections: no pool limit, or writes would queue behind them.
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(self.base, connector=connector) as self.http:
            root = self.auth(f"{ORG}/root", roles=("admin",))
            for i in range(INSTALLED):
                m = _manifest(i)
                body = {"manifest": m, "digest": m["build"]["digest"], "permissions": ["todo:read"]}
                async with self.http.post("/v1/mod/installs", json=body, headers=root) as r:
                    assert r.status == 201, await r.text()
            return {
                "surface": await self.surface(),
                "write": await self.write(),
                "watch": await self.watch(root),
            }

    async def _timed(self, method: str, path: str, headers: dict, **kw) -> float:
        start = time.perf_counter()
        async with self.http.request(method, path, headers=headers, **kw) as r:
            body = await r.read()
            assert r.status in (200, 202), body
        return time.perf_counter() - start

    async def surface(self) -> dict[str, list[float]]:
        ada = self.auth(f"{ORG}/ada")
        async with self.http.get("/v1/mod/surface", headers=ada) as r:
            found = await r.json()
            assert len(found["order"]) == 15 + INSTALLED, found["missing"]
        out: dict[str, list[float]] = {
            "GET /v1/mod/surface (65 mods)": [],
            "floor: GET /v1/mod/layers/org": [],
        }
        for _ in range(ROUNDS):
            out["GET /v1/mod/surface (65 mods)"].append(
                await self._timed("GET", "/v1/mod/surface", ada)
            )
            out["floor: GET /v1/mod/layers/org"].append(
                await self._timed("GET", "/v1/mod/layers/org", ada)
            )
        return out

    async def write(self) -> dict[str, list[float]]:
        ops = sixty_four_ops()
        out: dict[str, list[float]] = {
            "64-op POST /v1/mod/layers/user": [],
            "floor: bare KV update, same bytes": [],
        }
        operator = await nats.connect(
            self.nats_url,
            user=OPERATOR,
            password=self.passwords[OPERATOR],
            inbox_prefix=inbox_prefix(OPERATOR),
        )
        kv = await operator.jetstream().create_key_value(
            KeyValueConfig(bucket="bench-floor", history=64)
        )
        value = codec.encode({"ops": ops})
        revision = await kv.put("floor", value)
        for i in range(ROUNDS):
            person = self.auth(f"{ORG}/writer{i % 10}")
            async with self.http.get("/v1/mod/layers/user", headers=person) as r:
                base = (await r.json())["version"]
            mine = copy.deepcopy(ops)
            mine[0]["title"] = f"Round {i}"
            body = {"base": base, "ops": mine}
            out["64-op POST /v1/mod/layers/user"].append(
                await self._timed("POST", "/v1/mod/layers/user", person, json=body)
            )
            start = time.perf_counter()
            revision = await kv.update("floor", value, last=revision)
            out["floor: bare KV update, same bytes"].append(time.perf_counter() - start)
        await operator.close()
        return out

    async def watch(self, root: dict[str, str]) -> dict[str, list[float]]:
        """100 streams of /v1/mod/watch; each org write's event timed at every watcher."""
        seen: dict[int, list[float]] = {}
        ready = asyncio.Event()
        opened = 0

        async def watcher(i: int) -> None:
            nonlocal opened
            headers = self.auth(f"{ORG}/member{i}")
            async with self.http.get("/v1/mod/watch", headers=headers, timeout=None) as r:
                await r.content.readline()
                opened += 1
                if opened == WATCHERS:
                    ready.set()
                async for line in r.content:
                    if line.startswith(b"data: ") and b'"org"' in line:
                        version = int(line.split(b'"version":')[1].split(b"}")[0])
                        seen.setdefault(version, []).append(time.perf_counter())

        tasks = [asyncio.create_task(watcher(i)) for i in range(WATCHERS)]
        await asyncio.wait_for(ready.wait(), 60)
        await asyncio.sleep(1)  # each watcher's consumer is in place
        writes: dict[int, tuple[float, float]] = {}
        for i in range(WRITES):
            async with self.http.get("/v1/mod/layers/org", headers=root) as r:
                base = (await r.json())["version"]
            op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"Chat {i}"}
            start = time.perf_counter()
            async with self.http.post(
                "/v1/mod/layers/org", json={"base": base, "ops": [op]}, headers=root
            ) as r:
                version = (await r.json())["version"]
            writes[version] = (start, time.perf_counter())
            await asyncio.sleep(0.05)
        await asyncio.sleep(2)  # the last events on their way; a missing one is counted below
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        missing = sum(WATCHERS - len(seen.get(v, [])) for v in writes)
        assert missing == 0, f"{missing} events never reached their watcher"
        return {
            "write answered to event at a watcher": [
                t - answered for v, (_, answered) in writes.items() for t in seen[v]
            ],
            "floor: the write itself": [answered - start for start, answered in writes.values()],
        }


def main() -> None:
    with stack() as s:
        base = s.behind_gateway(*BEHIND)
        bench = Bench(base, s.home.jwt_key(), s.nats_url, s.passwords)
        results = uvloop.run(bench.run())
    for title, rows in (
        (
            f"the surface, 15 first-party mods + {INSTALLED} installed, {ROUNDS} sequential",
            "surface",
        ),
        (f"a 64-op layer write, {ROUNDS} sequential", "write"),
        (f"{WATCHERS} watchers open, {WRITES} writes to the org layer", "watch"),
    ):
        print(f"\n{title}")
        print("| path | p50 ms | p99 ms |")
        print("|---|---|---|")
        for name, values in results[rows].items():
            ms = [v * 1e3 for v in values]
            print(f"| {name} | {percentile(ms, 50):.2f} | {percentile(ms, 99):.2f} |")
    write = results["write"]
    ratio = percentile(write["64-op POST /v1/mod/layers/user"], 50) / percentile(
        write["floor: bare KV update, same bytes"], 50
    )
    print(f"\n64-op write / bare KV update, p50: {ratio:.2f}x")


if __name__ == "__main__":
    main()
