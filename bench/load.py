"""Mixed routes through the gateway for 60 s (wrk, 50 connections): `tether up` on one node
(one gateway process) and `tether up --cluster 3` (three NATS nodes, two of every process),
each against a bare aiohttp answering fixed JSON from the same number of processes on one
port, in the same run (issue 15's goal: the gateway path keeps at least 40% of it).

The mix, in turn per connection: who am I (agents), my rooms (rooms), my ladder (ladder),
and a Power-of-Action decision (poa, a 1.2 KB body).

    .venv/bin/python -m bench.load
"""

import json
import os
import sys
import tempfile
from pathlib import Path

from bench.common import cpu_seconds, free_port, http_status, process_tree, wrk
from bench.failover import ORG, start
from bench.poa_bus import BODY
from libs.stack.processes import spawn, stop_all
from libs.stack.servers import wait_for

SECONDS, CONNECTIONS = 60, 50
MIX = [("GET", "/v1/agents/me"), ("GET", "/v1/rooms"), ("GET", "/v1/ladder"),
       ("POST", "/v1/poa/verify")]  # fmt: skip


def _script(token: str) -> str:
    """wrk's Lua: each request the next of the mix, with the token and, for a POST, the body."""
    body = BODY.decode().replace("]]", "] ]")  # a Lua long string takes the rest as it is
    requests = ",\n".join(
        f'  {{"{m}", "{p}", {"[[" + body + "]]" if m == "POST" else "nil"}}}' for m, p in MIX
    )
    lua = f"""
local mix = {{
{requests}
}}
local i = 0
wrk.headers["Authorization"] = "Bearer {token}"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i % #mix + 1
  local r = mix[i]
  return wrk.format(r[1], r[2], nil, r[3])
end
"""
    f = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    f.write(lua)
    f.close()
    return f.name


def _bare(processes: int) -> tuple[str, list]:
    port = free_port()
    body = tempfile.NamedTemporaryFile(suffix=".json", delete=False)
    body.write(json.dumps({"ok": True, "bench": "bare"}).encode())
    body.close()
    procs = [
        spawn([sys.executable, "-m", "bench.bare", str(port), body.name, "reuse"], name="bare")
        for _ in range(processes)
    ]
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: http_status(f"{url}/readyz") == 200, procs, "bare aiohttp")
    return url, procs


def _cpu_per_request(used: dict[str, float], requests: float) -> dict[str, float]:
    """µs of CPU per request through the gateway, by process, busiest first."""
    per = {name: seconds / requests * 1e6 for name, seconds in used.items()}
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


def main() -> None:
    rows, cpu = [], []
    for nodes, processes in ((1, 1), (3, 2)):
        with tempfile.TemporaryDirectory() as home:
            cluster = start(Path(home), nodes)
            try:
                token = cluster.auth(f"{ORG}/ada")["Authorization"].split()[1]
                script = _script(token)
                tree = process_tree(cluster.proc.pid)
                before = cpu_seconds(tree)
                gateway = wrk(f"{cluster.url}/", connections=CONNECTIONS, seconds=SECONDS,
                              script=script)  # fmt: skip
                after = cpu_seconds(tree)
                used = {name: after[name] - before.get(name, 0.0) for name in after}
                cpu.append(_cpu_per_request(used, gateway["rps"] * SECONDS))
                bare_url, bare = _bare(processes)
                try:
                    floor = wrk(f"{bare_url}/", connections=CONNECTIONS, seconds=SECONDS,
                                script=script)  # fmt: skip
                finally:
                    stop_all(bare)
            finally:
                cluster.stop()
        rows.append((nodes, processes, gateway, floor))
    print(f"wrk -t1 -c{CONNECTIONS} -d{SECONDS}s, the mix {[p for _, p in MIX]} in turn")
    print("| shape | path | requests/s | p50 ms | p99 ms | non-2xx | kept |")
    print("|---|---|---|---|---|---|---|")
    for nodes, processes, g, b in rows:
        shape = f"{nodes} NATS node{'s' if nodes > 1 else ''}, {processes} gateway process" + (
            "es" if processes > 1 else ""
        )
        kept = g["rps"] / b["rps"]
        for name, m, k in (("gateway", g, f"{kept:.1%}"), ("bare aiohttp", b, "")):
            print(f"| {shape} | {name} | {m['rps']:,.0f} | {m['p50_ms']:.2f} | "
                  f"{m['p99_ms']:.2f} | {m['non_2xx']:.0f} | {k} |")  # fmt: skip
    # What the rest of the system spends on each request bounds the gateway path, however
    # little the gateway itself costs: these cores can serve no more than this.
    cores = os.cpu_count() or 1
    print(f"\nCPU per request through the gateway, each process of `tether up` ({cores} cores)")
    print("| shape | process | µs of CPU | share |")
    print("|---|---|---|---|")
    bounds = []
    for (nodes, _, _, bare), per in zip(rows, cpu, strict=True):
        shape, total = f"{nodes} node{'s' if nodes > 1 else ''}", sum(per.values())
        for name, us in per.items():
            print(f"| {shape} | {name} | {us:,.0f} | {us / total:.0%} |")
        print(f"| {shape} | all | {total:,.0f} | |")
        rest = total - per.get("gateway", 0.0)
        bounds.append((shape, rest, cores * 1e6 / rest, bare["rps"]))
    for shape, rest, most, bare_rps in bounds:
        print(
            f"\n{shape}: with a gateway that cost nothing, the rest ({rest:,.0f} µs a request) "
            f"serves at most {most:,.0f} requests/s: {most / bare_rps:.1%} of the bare handler."
        )


if __name__ == "__main__":
    main()
