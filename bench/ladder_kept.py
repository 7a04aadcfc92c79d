"""What a person's pending list costs as their settled windows pile up, one node.

The ladder reads every window a person has to list their pending sends (`windows`): one
batched direct get up to 1,024 keys, a consumer of its own past that. A settled window is
kept a week now (its key's only message, with a `Nats-TTL`), where it was kept for good;
this reads the list with 0 to 3,000 settled windows held beside one open one, and reads the
same keys past 1,024 by nats-py's watch too, the way that read was made before it became a
consumer of its own.

    .venv/bin/python -m bench.ladder_kept
"""

import asyncio
from datetime import UTC, datetime

import msgspec
from nats.aio.client import Client

from bench.common import on_one_node, p50_ms
from libs.contracts.base import key_token
from libs.contracts.ladder import PendingWindow
from services.ladder.store import Held, open_store

SETTLED, READS = (0, 100, 1_000, 3_000), 200


def _held(person: str, window_id: str) -> Held:
    window = PendingWindow(
        id=window_id,
        org="bench",
        room="r-00000000000000b1",
        reply_to=1,
        text="on my way",
        window="1m",
        due_at=datetime(2026, 12, 3, tzinfo=UTC),
        state="open",
        notice_seq=1,
    )
    return Held(person=person, transport=None, window=window)


def _stopped(held: Held | None) -> Held | None:
    assert held is not None
    return msgspec.structs.replace(
        held, window=msgspec.structs.replace(held.window, state="stopped")
    )


async def _watched(kv, keys: str) -> list:
    """The read past 1,024 keys as it was: nats-py's watch, to its "none pending" mark."""
    watcher = await kv.watch(keys, inactive_threshold=1.0)
    found = []
    async for entry in watcher:
        if entry is None:
            break
        found.append(entry)
    await watcher.stop()
    return found


async def run(nc: Client) -> list[tuple[int, float, float | None]]:
    store = await open_store(nc)
    out = []
    sem = asyncio.Semaphore(64)
    for settled in SETTLED:
        person = f"bench/p{settled}"

        async def settle(n: int, person: str = person) -> None:
            async with sem:
                await store.hold(_held(person, f"w-{n}"))
                await store.change_window(person, f"w-{n}", _stopped)

        await asyncio.gather(*(settle(n) for n in range(settled)))
        await store.hold(_held(person, "w-open"))
        listed = await store.windows(person)
        assert len(listed) == settled + 1
        by_watch = None
        if settled + 1 > 1_024:
            kv = await nc.jetstream().key_value("ladder")
            keys = f"window.{key_token(person)}.*"
            by_watch = await p50_ms(lambda kv=kv, keys=keys: _watched(kv, keys), READS)
        read = await p50_ms(lambda person=person: store.windows(person), READS)
        out.append((settled, read, by_watch))
    return out


def main() -> None:
    results = on_one_node(run)
    print(f"a person's windows listed (one open), p50 of {READS} reads in turn")
    print("| settled windows held | as read now, ms | by nats-py's watch (before), ms |")
    print("|---|---|---|")
    for settled, p50, by_watch in results:
        watch = "" if by_watch is None else f"{by_watch:.2f}"
        print(f"| {settled:,} | {p50:.2f} | {watch} |")


if __name__ == "__main__":
    main()
