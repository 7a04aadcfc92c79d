"""What noting an agent's reply adds to each message it answers (services/agents/answering.py):
the look for a reply noted before (a miss) and the note itself, against a bare KV create of
the same bytes, on one node and on three, 1,000 answers in turn each.

    .venv/bin/python -m bench.answered
"""

import secrets
import tempfile
import time
from pathlib import Path

import msgspec
import nats
import uvloop
from nats.js.api import KeyValueConfig

from bench.common import percentile
from libs.contracts import SERVICES
from libs.contracts.permissions import OPERATOR, inbox_prefix
from libs.runtime.kv import open_bucket
from libs.stack.processes import stop_all
from libs.stack.servers import start_nodes
from services.agents.store import open_store

ANSWERS = 1000
CANDIDATES = ("Thanks Bob, I'll look at the PR this afternoon and come back to you.",) * 3
AGENT = "agent:bench/ada"


async def measure(url: str, password: str, replicas: int) -> dict[str, tuple[float, float]]:
    nc = await nats.connect(
        url, user=OPERATOR, password=password, inbox_prefix=inbox_prefix(OPERATOR)
    )
    store = await open_store(nc.jetstream(), replicas=replicas)
    bare = await open_bucket(
        nc.jetstream(), KeyValueConfig(bucket="bare", history=1, replicas=replicas)
    )
    raw = msgspec.json.encode(CANDIDATES)
    timings: dict[str, list[float]] = {"bare KV create": [], "noted: looked for, then noted": []}
    for seq in range(1, ANSWERS + 1):
        start = time.perf_counter()
        await bare.create(f"bench.r-1.{seq}", raw)
        timings["bare KV create"].append(time.perf_counter() - start)
        start = time.perf_counter()
        assert await store.replied("bench", "r-1", seq, AGENT) is None
        await store.note_replied("bench", "r-1", seq, AGENT, CANDIDATES)
        timings["noted: looked for, then noted"].append(time.perf_counter() - start)
    await nc.close()
    return {name: (percentile(t, 50) * 1e3, percentile(t, 99) * 1e3) for name, t in timings.items()}


def main() -> None:
    print(f"{ANSWERS:,} answers in turn")
    print("| nodes | path | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for nodes in (1, 3):
        password = secrets.token_urlsafe(16)
        with tempfile.TemporaryDirectory() as root:
            procs, urls = start_nodes(Path(root), nodes, {OPERATOR: password}, SERVICES)
            try:
                results = uvloop.run(measure(urls[0], password, nodes))
            finally:
                stop_all(procs)
        for name, (p50, p99) in results.items():
            print(f"| {nodes} | {name} | {p50:.3f} | {p99:.3f} |")


if __name__ == "__main__":
    main()
