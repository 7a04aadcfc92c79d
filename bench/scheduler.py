"""The timer engine: fire lateness with 10,000 and 100,000 timers pending, against
APScheduler's date trigger on the same due times and the one-minute sweep of hip-0524 §14;
schedule and cancel throughput; recovery after a server restart with 100,000 pending.

    .venv/bin/python -m bench.scheduler

One scheduler replica in its own process. Lateness is measured where the owner reads the
fired timer (TIMERS), from its due time; the measured timers fall due at scattered
milliseconds over 20 s while the pending ones wait an hour out.
"""

import asyncio
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import nats
import uvloop

from bench.common import percentile, stack
from libs.contracts import codec
from libs.contracts.permissions import inbox_prefix
from libs.contracts.scheduler import Fired
from libs.stack.processes import stop_all
from libs.stack.servers import start_nats

MEASURED, SPREAD_MS, CONCURRENCY = 2000, 20_000, 200


class Client:
    def __init__(self, nc: nats.NATS) -> None:
        self.nc = nc

    async def ask(self, verb: str, body: dict) -> dict:
        # The scheduler's own probe target, called under its own name as an owner would.
        subject = f"tether.scheduler.{verb}.scheduler"
        reply = await self.nc.request(subject, codec.encode(body), timeout=30)
        return msgspec.json.decode(reply.data)

    async def many(self, verb: str, bodies: list[dict]) -> float:
        """Send them all, CONCURRENCY at a time; requests per second."""
        queue = iter(bodies)
        started = time.perf_counter()

        async def worker() -> None:
            for body in queue:
                answer = await self.ask(verb, body)
                assert "type" not in answer, answer

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return len(bodies) / (time.perf_counter() - started)


async def _quiet(_: Exception) -> None:
    """The restart below disconnects this client on purpose."""


def _schedule(key: str, due: datetime) -> dict:
    return {"key": key, "due_at": due.isoformat(), "target": "probe"}


async def lateness(client: Client, pending: int, run: str) -> dict[str, object]:
    far = datetime.now(UTC) + timedelta(hours=1)
    bodies = [_schedule(f"{run}.far.{i}", far + timedelta(milliseconds=i)) for i in range(pending)]
    schedule_rate = await client.many("schedule", bodies)
    offsets = sorted(random.uniform(0, SPREAD_MS) for _ in range(MEASURED))
    start = datetime.now(UTC) + timedelta(seconds=3)
    due = {f"{run}.m.{i}": start + timedelta(milliseconds=o) for i, o in enumerate(offsets)}
    await client.many("schedule", [_schedule(k, d) for k, d in due.items()])
    js = client.nc.jetstream()
    sub = await js.pull_subscribe("tether.timer.scheduler.>", durable="scheduler", stream="TIMERS")
    late: list[float] = []
    deadline = time.monotonic() + SPREAD_MS / 1000 + 60
    while len(late) < MEASURED and time.monotonic() < deadline:
        try:
            msgs = await sub.fetch(200, timeout=1)
        except TimeoutError:  # nats-py raises its own or asyncio's; both are TimeoutErrors
            continue
        received = time.time()
        for msg in msgs:
            fired = msgspec.json.decode(msg.data, type=Fired)
            if fired.key in due:
                late.append((received - fired.due_at.timestamp()) * 1000)
            await msg.ack()
    await sub.unsubscribe()
    return {"late": late, "offsets": offsets, "schedule_rate": schedule_rate}


def apscheduler(offsets: list[float], pending: int) -> list[float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump({"offsets_ms": offsets, "pending": pending}, spec)
    out = subprocess.run([sys.executable, "-m", "bench.apscheduler_side", spec.name],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def row(name: str, samples: list[float]) -> str:
    p50, p99 = percentile(samples, 50), percentile(samples, 99)
    return f"| {name} | {p50:.1f} | {p99:.1f} | {max(samples):.1f} | {len(samples)} |"


async def run() -> None:
    with stack() as s:
        replica = s.service("scheduler")
        nc = await nats.connect(s.nats_url, user="scheduler", password=s.passwords["scheduler"],
                                inbox_prefix=inbox_prefix("scheduler"), error_cb=_quiet,
                                max_reconnect_attempts=-1, reconnect_time_wait=0.25)  # fmt: skip
        client = Client(nc)
        while True:
            try:
                await client.ask("resolution", {})
                break
            except nats.errors.NoRespondersError:
                await asyncio.sleep(0.1)
        print("| timers pending | engine | p50 ms | p99 ms | max ms | fired |")
        print("|---|---|---|---|---|---|")
        rates: dict[str, float] = {}
        for pending in (10_000, 90_000):  # cumulative: 10,000 pending, then 100,000
            total = 10_000 if pending == 10_000 else 100_000
            result = await lateness(client, pending, f"r{total}")
            rates[f"schedule ({pending:,} timers)"] = result["schedule_rate"]
            print(row(f"{total:,} | tether", result["late"]))
            print(
                row(
                    f"{total:,} | APScheduler 3.11 date trigger",
                    apscheduler(result["offsets"], total),
                )
            )
        # hip-0524 §14: a due-time row swept every minute waits for the next sweep, so its
        # lateness is uniform on [0, 60 s): the q-quantile is q x 60 s, the worst 60 s.
        print("| any | one-minute sweep (computed) | 30000.0 | 59400.0 | 60000.0 | - |")
        cancels = [{"key": f"r100000.far.{i}"} for i in range(10_000)]
        rates[f"cancel ({len(cancels):,} timers)"] = await client.many("cancel", cancels)
        print("\n| operation | per second |\n|---|---|")
        for name, rate in rates.items():
            print(f"| {name} | {rate:,.0f} |")
        await recovery(s, client)
        await nc.close()
        stop_all([replica])


async def recovery(s, client: Client) -> None:
    """Restart nats-server with ~90,000 pending; time until the scheduler answers again."""
    nats_proc = s.servers[0]
    status = await asyncio.to_thread(Path(f"/proc/{nats_proc.pid}/status").read_text)
    rss = int(status.split("VmRSS:")[1].split()[0]) // 1024
    config = s.home.nats_dir / "nats-server.json"
    nats_proc.send_signal(signal.SIGTERM)
    nats_proc.wait()
    started = time.monotonic()
    restarted = await asyncio.to_thread(start_nats, json.loads(config.read_text()), config)
    ready = time.monotonic() - started
    while True:
        try:
            await client.ask("get", {"key": "r100000.far.99999"})
            break
        except Exception:
            await asyncio.sleep(0.02)
    answering = time.monotonic() - started
    print(f"\nnats-server RSS with ~90,000 pending: {rss} MiB; after a restart JetStream is "
          f"ready in {ready:.2f} s and the scheduler answers in {answering:.2f} s")  # fmt: skip
    s.servers[0] = restarted


if __name__ == "__main__":
    uvloop.run(run())
