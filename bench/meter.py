"""What counting one run costs the meter as an org's agents grow, one node.

The meter reads METER in order, one run at a time, for every org. It kept an org's month
whole under one key (`<org>.<YYYY-MM>`: every agent's runs and seconds), so each run read,
decoded, rewrote and wrote all of it; now each agent's month is its own key. Both are
timed here in the same run: the whole month as it was (a compare-and-set of the dict of
every agent, as the store's swap made it), and the agent's own key as the store writes it
now, with 100 to 20,000 agents metered in the org.

    .venv/bin/python -m bench.meter
"""

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

import msgspec
from nats.aio.client import Client
from nats.errors import MaxPayloadError

from bench.common import on_one_node, p50_ms
from libs.contracts import codec
from libs.contracts.agents import RunEnded
from libs.runtime.kv import swap
from services.agents.domain import meter
from services.agents.store import open_store

AGENTS, COUNTS, MONTH = (100, 1_000, 10_000, 20_000), 50, "2026-12"
AT = datetime(2026, 12, 5, tzinfo=UTC)


class _Whole(msgspec.Struct, frozen=True):
    """An org's month as it was kept: every agent's, and the last run counted."""

    agents: dict[str, meter.AgentMeter]
    last_seq: int = 0


def _run(org: str, agent: str, seq: int) -> RunEnded:
    return RunEnded(
        run=f"r{seq}", org=org, agent=agent, kind="personal", user=agent[6:], started_at=AT,
        ended_at=AT + timedelta(seconds=2),
    )  # fmt: skip


def _counted_whole(month: _Whole, run: RunEnded, seq: int) -> _Whole:
    if seq <= month.last_seq:
        return month
    counted = meter.record(month.agents.get(run.agent), run, seq)
    return _Whole(agents=month.agents | {run.agent: counted}, last_seq=seq)


async def run(nc: Client) -> list[tuple[int, float | None, float]]:
    """Each count a run of its own: its place on METER (`seq`) comes after the last."""
    seqs = itertools.count(2)
    store = await open_store(nc.jetstream())
    kv = await nc.jetstream().key_value("agents-meter")
    sem = asyncio.Semaphore(64)
    whole = codec.decoder(_Whole).decode
    out = []
    for n in AGENTS:
        org = f"o{n}"
        held = {
            f"agent:{org}/p{i:05d}": meter.AgentMeter(
                agent=f"agent:{org}/p{i:05d}",
                kind="personal",
                user=f"{org}/p{i:05d}",
                runs=3,
                seconds=42,
                last_seq=1,
            )
            for i in range(n)
        }
        try:
            await kv.put(f"whole.{org}.{MONTH}", codec.encode(_Whole(agents=held, last_seq=1)))
            fits = True
        except MaxPayloadError:  # more than a message of the bus carries: nothing counts
            fits = False

        async def put(m: meter.AgentMeter, org: str = org) -> None:
            async with sem:
                await store.change_meter(org, MONTH, m.agent, lambda _, m=m: m)

        await asyncio.gather(*(put(m) for m in held.values()))
        agent = f"agent:{org}/p00001"

        async def as_whole(org: str = org, agent: str = agent) -> None:
            seq = next(seqs)
            await swap(
                kv, f"whole.{org}.{MONTH}",
                lambda month: _counted_whole(month, _run(org, agent, seq), seq),
                decode=whole, default=_Whole(agents={}),
            )  # fmt: skip

        async def apart(org: str = org, agent: str = agent) -> None:
            seq = next(seqs)
            run = _run(org, agent, seq)
            await store.change_meter(
                org, MONTH, agent, lambda before: meter.record(before, run, seq)
            )

        whole_p50 = await p50_ms(as_whole, COUNTS) if fits else None
        out.append((n, whole_p50, await p50_ms(apart, COUNTS)))
    return out


def main() -> None:
    results = on_one_node(run)
    print(f"one run counted by the meter, p50 of {COUNTS} in turn")
    print(
        "| agents metered in the org | the month whole (before), ms | the agent's own (now), ms |"
    )
    print("|---|---|---|")
    for n, before, now in results:
        whole = "does not fit in a message" if before is None else f"{before:.2f}"
        print(f"| {n:,} | {whole} | {now:.2f} |")


if __name__ == "__main__":
    main()
