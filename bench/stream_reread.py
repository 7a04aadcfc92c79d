"""What a pending stream's reread costs (`TETHER_STREAM_REREAD`): each open stream that heard
nothing reads its person's list again, six requests on the bus. 300 people each hold one
stream open, idle, for 60 s, behind a gateway that rereads every 5 s, then behind one that
never does (a year), in the same run; the CPU every process used is read from /proc. The
difference, divided by the rereads made, is one reread's cost, from which the default's (30
s) is worked out per thousand open streams.

    .venv/bin/python -m bench.stream_reread
"""

import asyncio
import os
import time

import aiohttp
import uvloop

from bench.common import cpu_seconds, process_tree, stack
from libs.stack.servers import free_port
from services.gateway.tokens import mint

ORG, PEOPLE, SECONDS, REREAD = "bench", 300, 60, 5
SERVICES = ("audit", "agents", "scheduler", "rooms", "ladder", "poa", "mod")


async def idle_streams(base: str, key: str) -> float:
    """The CPU seconds every process used while PEOPLE streams were open and idle."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(base, connector=connector) as http:
        opened = asyncio.Semaphore(0)

        async def hold(person: str) -> None:
            token = mint(key, org=ORG, user=person, now=int(time.time()))
            headers = {"Authorization": f"Bearer {token}"}
            async with http.get("/v1/pending/stream", headers=headers, timeout=None) as r:
                assert r.status == 200, await r.text()
                await r.content.readuntil(b"\n\n")  # the list, read once
                opened.release()
                async for _ in r.content:
                    pass

        tasks = [asyncio.create_task(hold(f"{ORG}/p{i}")) for i in range(PEOPLE)]
        for _ in range(PEOPLE):
            await asyncio.wait_for(opened.acquire(), 60)
        await asyncio.sleep(2)  # what opening them set going has settled
        pids = process_tree(os.getpid())
        before = cpu_seconds(pids)
        await asyncio.sleep(SECONDS)
        after = cpu_seconds(pids)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return sum(after.values()) - sum(before.values())


def main() -> None:
    used = {}
    with stack() as s:
        for name in SERVICES:
            s.service(name)
        for reread in (str(REREAD), str(365 * 86400)):
            port = free_port()
            gateway = s.gateway(port, TETHER_STREAM_REREAD=reread)
            used[reread] = uvloop.run(idle_streams(f"http://127.0.0.1:{port}", s.home.jwt_key()))
            gateway.terminate()
            gateway.wait()
            s.procs.remove(gateway)
    rereads = PEOPLE * SECONDS / REREAD
    each = (used[str(REREAD)] - used[str(365 * 86400)]) / rereads
    print(f"{PEOPLE} pending streams open and idle for {SECONDS} s\n")
    print("| gateway | CPU s, every process | rereads |\n|---|---|---|")
    print(f"| rereads every {REREAD} s | {used[str(REREAD)]:.2f} | {rereads:.0f} |")
    print(f"| never rereads | {used[str(365 * 86400)]:.2f} | 0 |")
    print(f"\none reread: {each * 1e6:.0f} µs of CPU; at the default 30 s, 1,000 open streams")
    print(f"cost {1000 / 30 * each * 100:.1f}% of one core")


if __name__ == "__main__":
    main()
