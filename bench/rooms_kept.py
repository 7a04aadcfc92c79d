"""What the rooms read for a person's drafts and a line room's page as what they hold piles
up, one node.

- A person's drafts (`my_drafts`, in their pending list and its stream) are read by the
  filter `draft.<person>.*.*`: every draft held for them. A sent or discarded one is kept a
  week now, where it was kept for good, so this reads the drafts with 0 to 3,000 closed
  ones held beside one open one.
- A page of a line room's messages carries how each fares: the deliveries were read by
  the filter `delivery.<room>.*` (every message the room ever sent), and are now read by
  the page's 50 keys. Both reads are timed on rooms that sent 50 to 3,000 messages.

    .venv/bin/python -m bench.rooms_kept
"""

import asyncio
from datetime import UTC, datetime

from nats.aio.client import Client

from bench.common import on_one_node, p50_ms
from libs.contracts import codec
from libs.contracts.rooms import Delivery, Draft
from libs.runtime.kv import current
from services.rooms.store import open_store

HELD, READS, PAGE = (0, 100, 1_000, 3_000), 200, 50
AT = datetime(2026, 12, 5, tzinfo=UTC)


def _draft(person: str, n: int, state: str) -> Draft:
    room = f"r-{n:016x}"
    return Draft(
        id=f"d-{n:016x}-1", room=room, org="bench", agent=f"agent:{person}", person=person,
        reply_to=1, text="Yes, Thursday works. " * 20, first_contact=False, state=state,  # type: ignore[arg-type]
        created_at=AT,
    )  # fmt: skip


async def run(nc: Client) -> tuple[list, list]:
    store = await open_store(nc)
    kv = await nc.jetstream().key_value("rooms")
    sem = asyncio.Semaphore(64)

    async def limited(write) -> None:
        async with sem:
            await write

    drafts = []
    for held in HELD:
        person = f"bench/p{held}"
        await asyncio.gather(
            *(limited(store.create_draft(_draft(person, n, "sent"))) for n in range(held))
        )
        await store.create_draft(_draft(person, held, "open"))
        assert len(await store.drafts_of(person)) == held + 1
        drafts.append((held, await p50_ms(lambda person=person: store.drafts_of(person), READS)))

    deliveries = []
    for sent in HELD[1:]:
        room = f"r-{sent:016x}"
        fare = codec.encode(Delivery(transport="sms", carrier_id="SM1", status="sent", at=AT))
        await asyncio.gather(
            *(limited(kv.put(f"delivery.{room}.{seq}", fare)) for seq in range(1, sent + 1))
        )
        page = list(range(sent - PAGE + 1, sent + 1))
        assert len(await store.deliveries(room, page)) == PAGE
        whole = await p50_ms(lambda room=room: current(kv, f"delivery.{room}.*"), READS)
        paged = await p50_ms(lambda room=room, page=page: store.deliveries(room, page), READS)
        deliveries.append((sent, whole, paged))
    return drafts, deliveries


def main() -> None:
    drafts, deliveries = on_one_node(run)
    print(f"a person's drafts read (one open), p50 of {READS} reads in turn")
    print("| closed drafts held | ms |")
    print("|---|---|")
    for held, p50 in drafts:
        print(f"| {held:,} | {p50:.2f} |")
    print(f"\na line room's deliveries for a page of {PAGE}, p50 of {READS} reads in turn")
    print("| messages the room sent | every delivery (before), ms | the page's (now), ms |")
    print("|---|---|---|")
    for sent, whole, paged in deliveries:
        print(f"| {sent:,} | {whole:.2f} | {paged:.2f} |")


if __name__ == "__main__":
    main()
