"""PoA decisions over the bus (50 requests in flight) and through the gateway (wrk, 50
connections), against one poa replica in its own process.

    .venv/bin/python -m bench.poa_bus
"""

import asyncio
import json
import tempfile
import time

import msgspec
import nats
import uvloop

from bench.common import ROOT, free_port, percentile, stack, wrk
from libs.contracts.permissions import GATEWAY, inbox_prefix
from libs.contracts.principal import PRINCIPAL_HEADER, Principal
from services.gateway.tokens import mint

VECTORS = json.loads((ROOT / "vectors" / "poa-1.3-official.json").read_text())
CASE = next(c for c in VECTORS["verification"] if c["id"] == "allow_within_limits")
BODY = json.dumps({k: CASE[k] for k in ("grant", "parents", "envelope", "state")}).encode()
IN_FLIGHT, SECONDS = 50, 10


async def over_the_bus(url: str, password: str) -> dict[str, float]:
    nc = await nats.connect(
        url, user=GATEWAY, password=password, inbox_prefix=inbox_prefix(GATEWAY)
    )
    principal = msgspec.json.encode(Principal(org="bench", sub="bench/ada")).decode()
    headers = {PRINCIPAL_HEADER: principal}
    latencies: list[float] = []
    deadline = time.perf_counter() + SECONDS

    async def worker() -> None:
        while (start := time.perf_counter()) < deadline:
            reply = await nc.request("tether.poa.verify", BODY, timeout=5, headers=headers)
            latencies.append(time.perf_counter() - start)
            assert b'"ALLOW"' in reply.data, reply.data

    while True:  # the replica is up once it answers its health subject
        try:
            await nc.request("tether.poa.health", b"{}", timeout=1)
            break
        except nats.errors.NoRespondersError:
            await asyncio.sleep(0.05)
    for _ in range(1000):  # warm up
        await nc.request("tether.poa.verify", BODY, timeout=5, headers=headers)
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
    elapsed = time.perf_counter() - started
    await nc.close()
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p99_ms": percentile(latencies, 99) * 1e3,
    }


def main() -> None:
    with stack() as s:
        s.service("poa")
        bus = uvloop.run(over_the_bus(s.nats_url, s.passwords[GATEWAY]))
        port = free_port()
        s.gateway(port)
        token = mint(s.home.jwt_key(), org="bench", user="bench/ada", now=int(time.time()))
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            body = BODY.decode().replace("\\", "\\\\").replace("]]", "] ]")
            script.write(f'wrk.method = "POST"\nwrk.body = [[{body}]]\n'
                         'wrk.headers["Content-Type"] = "application/json"\n')  # fmt: skip
        http = wrk(f"http://127.0.0.1:{port}/v1/poa/verify", script=script.name,
                   headers={"Authorization": f"Bearer {token}"}, seconds=SECONDS)  # fmt: skip
    print(f"tether.poa.verify on allow_within_limits ({len(BODY)} bytes), {SECONDS} s each")
    print("| path | decisions/s | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for name, m in ((f"bus, {IN_FLIGHT} in flight (nats-py client)", bus),
                    ("HTTP through the gateway, wrk -c50", http)):  # fmt: skip
        print(f"| {name} | {m['rps']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} |")
    print(f"(non-2xx through the gateway: {http['non_2xx']:.0f})")


if __name__ == "__main__":
    main()
