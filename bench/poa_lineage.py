"""The grant-lineage ledger write (issue 10.1) against the per-grant write it replaced, in
the same run on the same nats-server: 200 concurrent acts across 10 sibling grants of one
root, every act allowed and written, 10 rounds each.

    lineage    one compare-and-set on the root's ledger charges the act to the child and
               the root together (libs.runtime.kv.swap: writes to one key taken in turn
               within the replica)
    per grant  the earlier way: each child's own ledger, a compare-and-set per act,
               retried on a conflict; the root's limits never see the siblings' spending

    .venv/bin/python -m bench.poa_lineage
"""

import asyncio
import copy
import json
import time
from datetime import UTC, datetime

import nats
import uvloop
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

from bench.common import ROOT, percentile, stack
from libs.contracts import codec
from libs.contracts.permissions import inbox_prefix
from libs.runtime.kv import open_bucket
from services.poa.domain import ALLOW, ledger, verify
from services.poa.store import LedgerStore, open_stores

VECTORS = json.loads((ROOT / "vectors" / "poa-1.3-official.json").read_text())
SIBLINGS, CONCURRENT, ROUNDS = 10, 200, 10
NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)


def _case(name: str) -> dict:
    return copy.deepcopy(next(c for c in VECTORS["verification"] if c["id"] == name))


def _tree() -> tuple[dict, list[dict], dict]:
    """The official root and ten children, with limits no benchmark reaches."""
    root = _case("allow_within_limits")["grant"]
    root["defaults"]["max_binding_per_day"] = 10**9
    root["defaults"]["limits"]["per_month_usd"] = 10**12
    children = []
    for i in range(SIBLINGS):
        child = _case("child_within_parent")["grant"]
        child["grant_id"] = f"sibling_{i}"
        child["defaults"]["max_binding_per_day"] = 10**9
        child["defaults"]["limits"]["per_month_usd"] = 10**12
        child["authorities"][0]["limits"]["monthly_total_lte"] = 10**12
        children.append(child)
    for authority in root["authorities"]:
        if authority.get("limits"):
            authority["limits"]["monthly_total_lte"] = 10**12
    envelope = _case("child_within_parent")["envelope"]
    return root, children, envelope


async def lineage(store: LedgerStore, root: dict, child: dict, envelope: dict, org: str) -> None:
    """The poa service's act path, without the audit record."""
    chain = [(root["grant_id"], root), (child["grant_id"], child)]
    before, after = await store.change(
        org,
        "ada",
        root["grant_id"],
        "2026-10",
        lambda books: ledger.acted(
            books,
            ledger.decided(chain, envelope, books, NOW, revoked=False),
            [id_ for id_, _ in chain],
            envelope,
            NOW,
        ),
    )
    assert after != before, "every act is allowed"


async def per_grant(kv, root: dict, child: dict, envelope: dict, org: str) -> None:
    """The earlier act path: the child's own month, one compare-and-set, retried."""
    key = f"{org}.ada.{child['grant_id']}.2026-10"
    while True:
        try:
            entry = await kv.get(key)
            month, revision = PER_GRANT.decode(entry.value), entry.revision
        except KeyNotFoundError:
            month, revision = ledger.Ledger(month="2026-10"), 0
        decision = verify(child, [root], envelope, ledger.state(month, NOW, revoked=False))
        assert decision.decision == ALLOW, decision
        books = ledger.charge(
            ledger.RootLedger(month="2026-10", grants={"c": month}),
            ["c"],
            envelope,
            NOW,
            official=True,
        )
        try:
            value = codec.encode(books.of("c"))
            if revision == 0:
                await kv.create(key, value)
            else:
                await kv.update(key, value, last=revision)
            return
        except KeyWrongLastSequenceError:
            continue


async def measure(act, name: str) -> dict[str, float]:
    latencies: list[float] = []

    async def one(i: int, org: str) -> None:
        start = time.perf_counter()
        await act(i, org)
        latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(one(i, f"warm-{name}") for i in range(CONCURRENT)))
    latencies.clear()
    started = time.perf_counter()
    for r in range(ROUNDS):
        await asyncio.gather(*(one(i, f"round{r}-{name}") for i in range(CONCURRENT)))
    elapsed = time.perf_counter() - started
    return {
        "acts_s": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50) * 1e3,
        "p99_ms": percentile(latencies, 99) * 1e3,
    }


PER_GRANT = codec.decoder(ledger.Ledger)


async def run(url: str, password: str) -> dict[str, dict[str, float]]:
    nc = await nats.connect(url, user="poa", password=password, inbox_prefix=inbox_prefix("poa"))
    js = nc.jetstream()
    root, children, envelope = _tree()
    _, store, _ = await open_stores(js)  # the ledger as the service opens it
    old = await open_bucket(js, KeyValueConfig(bucket="poa-grants", history=1))
    results = {
        "per grant (before)": await measure(
            lambda i, org: per_grant(old, root, children[i % SIBLINGS], envelope, org), "old"
        ),
        "lineage (now)": await measure(
            lambda i, org: lineage(store, root, children[i % SIBLINGS], envelope, org), "new"
        ),
    }
    await nc.close()
    return results


def main() -> None:
    with stack() as s:
        results = uvloop.run(run(s.nats_url, s.passwords["poa"]))
    print(f"{CONCURRENT} concurrent acts across {SIBLINGS} siblings, {ROUNDS} rounds, one process")
    print("| ledger write | acts/s | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for name, m in results.items():
        print(f"| {name} | {m['acts_s']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} |")
    before, now = results["per grant (before)"], results["lineage (now)"]
    print(
        f"lineage / per grant: throughput {now['acts_s'] / before['acts_s']:.2f}x, "
        f"p99 {now['p99_ms'] / before['p99_ms']:.2f}x"
    )


if __name__ == "__main__":
    main()
