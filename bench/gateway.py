"""HTTP -> gateway -> NATS -> a service's health handler -> back (`/readyz/poa`), against
a bare aiohttp handler returning the same JSON, at 50 connections with wrk. Then the cold
start of `tether up`.

    .venv/bin/python -m bench.gateway
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench.common import ROOT, free_port, http_status, median, stack, wrk
from libs.stack.processes import spawn, stop_all
from libs.stack.servers import wait_for

ROUNDS = 3


def through_the_bus() -> None:
    with stack() as s:
        s.service("poa")
        port = free_port()
        s.gateway(port)
        url = f"http://127.0.0.1:{port}/readyz/poa"
        with urllib.request.urlopen(url) as response:
            body = response.read()
        body_file = tempfile.NamedTemporaryFile(suffix=".json", delete=False)
        body_file.write(body)
        body_file.close()
        bare_port = free_port()
        argv = [sys.executable, "-m", "bench.bare", str(bare_port), body_file.name]
        bare = spawn(argv, name="bare")
        bare_url = f"http://127.0.0.1:{bare_port}/readyz"
        wait_for(lambda: http_status(bare_url) == 200, bare, "bare aiohttp")
        runs = {"gateway + bus + health": [], "bare aiohttp": []}
        try:
            for _ in range(ROUNDS):  # alternate, so both see the same machine
                runs["gateway + bus + health"].append(wrk(url))
                runs["bare aiohttp"].append(wrk(bare_url))
        finally:
            stop_all([bare])
            os.unlink(body_file.name)
    print(f"body: {len(body)} bytes, {ROUNDS} alternating rounds of wrk -t1 -c50 -d10s; medians")
    print("| path | requests/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|")
    med = {}
    for name, results in runs.items():
        med[name] = {k: median([r[k] for r in results]) for k in results[0]}
        m = med[name]
        cells = (
            f"{m['rps']:.0f}",
            f"{m['p50_ms']:.2f}",
            f"{m['p99_ms']:.2f}",
            f"{m['non_2xx']:.0f}",
        )
        print(f"| {name} | {' | '.join(cells)} |")
    ratio = med["gateway + bus + health"]["rps"] / med["bare aiohttp"]["rps"]
    print(f"\nbus path keeps {ratio:.1%} of the bare handler's throughput")


def cold_start() -> None:
    """`tether up` with an empty state directory until /readyz answers 200."""
    times = []
    for _ in range(ROUNDS):
        with tempfile.TemporaryDirectory() as home:
            port = free_port()
            env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "REDIS_URL")}
            env |= {
                "TETHER_HOME": home,
                "TETHER_PORT": str(port),
                "TETHER_NATS_PORT": str(free_port()),
                "TETHER_NATS_MONITOR_PORT": str(free_port()),
                "TETHER_REDIS_PORT": str(free_port()),
                "TETHER_METRICS_BASE_PORT": str(free_port()),
            }
            started = time.monotonic()
            argv = [sys.executable, "-m", "cli.main", "up"]
            quiet = subprocess.DEVNULL
            up = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=quiet, stderr=quiet)
            while http_status(f"http://127.0.0.1:{port}/readyz") != 200:
                time.sleep(0.02)
            times.append(time.monotonic() - started)
            up.send_signal(signal.SIGTERM)
            up.wait(timeout=30)
    print(f"\ncold start of tether up to a green /readyz: {', '.join(f'{t:.2f}' for t in times)} s")


if __name__ == "__main__":
    through_the_bus()
    cold_start()
