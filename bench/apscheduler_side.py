"""APScheduler's date trigger (in-memory job store) on the same due times as tether's run.

argv: a JSON file with {"offsets_ms": [...], "pending": N}; prints JSON lateness samples (ms).
Run in its own process so it has a core's share like the scheduler has.
"""

import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler


async def main(offsets_ms: list[float], pending: int) -> list[float]:
    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.start()
    far = datetime.now(UTC) + timedelta(hours=1)
    for i in range(pending):
        scheduler.add_job(print, "date", run_date=far + timedelta(milliseconds=i), id=f"p{i}")
    late: list[float] = []
    done = asyncio.Event()
    start = datetime.now(UTC) + timedelta(seconds=2)

    def fire(due: datetime) -> None:
        late.append((time.time() - due.timestamp()) * 1000)
        if len(late) == len(offsets_ms):
            done.set()

    for i, offset in enumerate(offsets_ms):
        due = start + timedelta(milliseconds=offset)
        scheduler.add_job(fire, "date", run_date=due, args=[due], id=f"m{i}",
                          misfire_grace_time=None)  # fmt: skip
    await asyncio.wait_for(done.wait(), timeout=max(offsets_ms) / 1000 + 60)
    scheduler.shutdown(wait=False)
    return late


if __name__ == "__main__":
    spec = json.loads(open(sys.argv[1]).read())
    print(json.dumps(asyncio.run(main(spec["offsets_ms"], spec["pending"]))))
