"""Where a 64-op layer write's time goes (issue 12): each of its steps asked alone, one at a
time, beside the write on the bus and through the gateway; then the CPU each process spends
per write (read from /proc) while writes are asked one after another. The same stack as
bench.mod: audit, scheduler, ladder and mod, each in its own process, behind the gateway.

    .venv/bin/python -m bench.mod_split
"""

import os
import time
from collections.abc import Awaitable, Callable

import aiohttp
import msgspec
import nats
import uvloop
from nats.js.api import KeyValueConfig

from bench.common import cpu_seconds, percentile, process_tree, stack
from bench.mod import BEHIND, ORG, sixty_four_ops
from libs.contracts import codec, mod
from libs.contracts.permissions import GATEWAY, OPERATOR, inbox_prefix
from libs.contracts.principal import PRINCIPAL_HEADER, Principal
from libs.runtime.kv import current
from services.gateway.tokens import mint

ROUNDS, CPU_SECONDS = 300, 15
Step = Callable[[int], Awaitable[object]]


class Split:
    def __init__(self, url: str, passwords: dict[str, str], base: str, key: str) -> None:
        self.url, self.passwords, self.base, self.key = url, passwords, base, key
        self.ops = sixty_four_ops()
        self.versions: dict[str, int] = {}

    async def connect(self, role: str) -> nats.NATS:
        return await nats.connect(
            self.url, user=role, password=self.passwords[role], inbox_prefix=inbox_prefix(role)
        )

    def body(self, person: str, n: int, ops: int) -> dict:
        mine = [*self.ops[: ops - 1], dict(self.ops[ops - 1], title=f"Round {n}")]
        return {"layer": "user", "base": self.versions.get(person, 0), "ops": mine}

    async def run(self) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
        gateway, as_mod, operator = [await self.connect(r) for r in (GATEWAY, "mod", OPERATOR)]
        http = aiohttp.ClientSession(self.base)

        def on_the_bus(person: str, ops: int) -> Step:
            principal = Principal(org=ORG, sub=f"{ORG}/{person}")
            headers = {PRINCIPAL_HEADER: msgspec.json.encode(principal).decode()}

            async def write(n: int) -> None:
                body = codec.encode(self.body(person, n, ops))
                reply = await gateway.request(mod.WRITE.name, body, timeout=5, headers=headers)
                self.versions[person] = msgspec.json.decode(reply.data)["version"]

            return write

        token = mint(self.key, org=ORG, user=f"{ORG}/http", now=int(time.time()))
        auth = {"Authorization": f"Bearer {token}"}

        async def through_the_gateway(n: int) -> None:
            body = self.body("http", n, 64)
            body.pop("layer")
            async with http.post("/v1/mod/layers/user", json=body, headers=auth) as r:
                self.versions["http"] = (await r.json())["version"]

        async def gateway_health(_: int) -> None:
            async with http.get("/healthz") as r:
                await r.read()

        async def bus_round_trip(_: int) -> None:
            await gateway.request("tether.mod.health", b"{}", timeout=5)

        layers = await as_mod.jetstream().key_value(mod.LAYERS_BUCKET)

        async def both_layers(_: int) -> None:
            await current(layers, f"{ORG}.org", f"{ORG}.user.bus")

        record = {"layer": "user", "before": 1, "ops": msgspec.to_builtins(self.ops)}
        append = codec.encode(
            {"org": ORG, "actor": None, "action": "mod.layer.write", "data": record}
        )

        async def audit_record(_: int) -> None:
            await as_mod.request("tether.audit.append.mod", append, timeout=5)

        floor = await operator.jetstream().create_key_value(
            KeyValueConfig(bucket="bench-split", history=64)
        )
        value = codec.encode({"ops": self.ops, "change": {"ops": self.ops}})
        revision = [await floor.put("k", value)]

        async def kv_update(_: int) -> None:
            revision[0] = await floor.update("k", value, last=revision[0])

        steps: dict[str, Step] = {
            "HTTP GET /healthz (the gateway alone)": gateway_health,
            "a bus request and reply (mod's health)": bus_round_trip,
            "both layers, one batched direct get": both_layers,
            "the audit record of 64 ops (tether.audit.append)": audit_record,
            "floor: a bare KV update of the layer's bytes": kv_update,
            "1-op write on the bus": on_the_bus("one", 1),
            "64-op write on the bus": on_the_bus("bus", 64),
            "64-op POST /v1/mod/layers/user": through_the_gateway,
        }
        latency = {}
        for name, step in steps.items():
            samples = []
            for n in range(ROUNDS):
                start = time.perf_counter()
                await step(n)
                samples.append(time.perf_counter() - start)
            latency[name] = (percentile(samples, 50) * 1e3, percentile(samples, 99) * 1e3)

        tree = process_tree(os.getpid())
        write, done = on_the_bus("cpu", 64), 0
        before, clock = cpu_seconds(tree), time.process_time()
        deadline = time.perf_counter() + CPU_SECONDS
        while time.perf_counter() < deadline:
            await write(done)
            done += 1
        used = cpu_seconds(tree)
        cpu = {name: (used[name] - before.get(name, 0.0)) / done * 1e6 for name in used}
        cpu["this client"] = (time.process_time() - clock) / done * 1e6
        cpu["wall"] = CPU_SECONDS / done * 1e6
        await http.close()
        for nc in (gateway, as_mod, operator):
            await nc.close()
        return latency, cpu


def main() -> None:
    with stack() as s:
        base = s.behind_gateway(*BEHIND)
        split = Split(s.nats_url, s.passwords, base, s.home.jwt_key())
        latency, cpu = uvloop.run(split.run())
    print(f"each step alone, {ROUNDS} one at a time")
    print("| step | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, (p50, p99) in latency.items():
        print(f"| {name} | {p50:.2f} | {p99:.2f} |")
    wall = cpu.pop("wall")
    print(f"\nCPU per 64-op write on the bus, writes one after another for {CPU_SECONDS} s")
    print(f"({wall:,.0f} µs of wall time each, {os.cpu_count()} cores)")
    print("| process | µs of CPU per write |")
    print("|---|---|")
    for name, us in sorted(cpu.items(), key=lambda kv: -kv[1]):
        if us >= 1:
            print(f"| {name} | {us:,.0f} |")


if __name__ == "__main__":
    main()
