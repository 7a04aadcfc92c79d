"""Reads that see every acknowledged write, on one node and on three (libs/runtime/leader.py):

stale   3,000 writes, each read back as soon as it is acknowledged, from the writer's node
        and from another: how many reads saw the value before, by direct get (`current`)
        and through the stream's leader (`latest`)
cost    a person's settings and their org's ceiling read 1,000 times one after another and
        for 4 s at 50 in flight: one batched direct get against two leader gets

    .venv/bin/python -m bench.exact_reads
"""

import asyncio
import secrets
import tempfile
import time
from pathlib import Path

import nats
import uvloop
from nats.js.api import KeyValueConfig

from bench.common import percentile
from libs.contracts import SERVICES
from libs.contracts.permissions import OPERATOR, inbox_prefix
from libs.runtime.kv import current, open_bucket
from libs.runtime.leader import latest
from libs.stack.processes import stop_all
from libs.stack.servers import start_nodes

WRITES, ROUNDS, SECONDS, IN_FLIGHT = 3000, 1000, 4, 50
READS = {"direct get (current)": current, "leader get (latest)": latest}


async def _connect(url: str, password: str) -> nats.NATS:
    return await nats.connect(
        url, user=OPERATOR, password=password, inbox_prefix=inbox_prefix(OPERATOR)
    )


async def stale(urls: list[str], password: str) -> dict[str, int]:
    writer, other = await _connect(urls[0], password), await _connect(urls[-1], password)
    kv = await open_bucket(
        writer.jetstream(), KeyValueConfig(bucket="stale", history=1, replicas=len(urls))
    )
    elsewhere = await other.jetstream().key_value("stale")
    missed = {f"{name}, {where}": 0 for name in READS for where in ("writer's node", "another")}
    for i in range(WRITES):
        written = str(i).encode()
        await kv.put("level", written)
        for name, read in READS.items():
            for where, bucket in (("writer's node", kv), ("another", elsewhere)):
                (entry,) = await read(bucket, "level")
                missed[f"{name}, {where}"] += entry.value != written
    await writer.close()
    await other.close()
    return missed


async def cost(urls: list[str], password: str) -> dict[str, tuple[float, float]]:
    nc = await _connect(urls[0], password)
    kv = await open_bucket(
        nc.jetstream(), KeyValueConfig(bucket="cost", history=4, replicas=len(urls))
    )
    await kv.put("settings.bench_ada", b'{"level":"send","window":"1m"}')
    await kv.put("ceiling.bench", b"confirm")
    out = {}
    for name, read in READS.items():
        latencies = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            await read(kv, "settings.bench_ada", "ceiling.bench")
            latencies.append(time.perf_counter() - start)
        out[name] = (percentile(latencies, 50) * 1e3, await _rate(read, kv))
    await nc.close()
    return out


async def _rate(read, kv) -> float:
    """Reads a second of settings and ceiling together, IN_FLIGHT at a time."""
    done, deadline = 0, time.perf_counter() + SECONDS

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await read(kv, "settings.bench_ada", "ceiling.bench")
            done += 1

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    return done / SECONDS


def main() -> None:
    results = {}
    for nodes in (1, 3):
        password = secrets.token_urlsafe(16)
        with tempfile.TemporaryDirectory() as root:
            procs, urls = start_nodes(Path(root), nodes, {OPERATOR: password}, SERVICES)
            try:
                results[nodes] = (
                    uvloop.run(stale(urls, password)),
                    uvloop.run(cost(urls, password)),
                )
            finally:
                stop_all(procs)
    print(f"{WRITES:,} writes, each read back as soon as it was acknowledged")
    print("| nodes | read, from | reads that saw the value before |")
    print("|---|---|---|")
    for nodes, (missed, _) in results.items():
        for name, count in missed.items():
            print(f"| {nodes} | {name} | {count:,} |")
    print(f"\nsettings and ceiling read together: p50 of {ROUNDS:,} in turn, rate at {IN_FLIGHT}")
    print("| nodes | read | p50 ms | reads/s |")
    print("|---|---|---|---|")
    for nodes, (_, costs) in results.items():
        for name, (p50, rate) in costs.items():
            print(f"| {nodes} | {name} | {p50:.3f} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
