"""A room's stream of messages: from a message's POST to its event at each member's stream
(8 streams open on one room, 200 messages one after another), against the floor of the
same POST to the message heard live on the bus, in the same run. A live message is a
doorbell: each stream reads the history since its last message and sends what it finds,
so that none is passed over. One rooms replica, with the audit and agents it asks, and the
gateway, each in its own process.

    .venv/bin/python -m bench.room_stream
"""

import asyncio
import time

import aiohttp
import msgspec
import nats
import uvloop

from bench.common import percentile, stack
from libs.contracts import rooms
from libs.contracts.permissions import OPERATOR, inbox_prefix
from services.gateway.tokens import mint

ORG, MEMBERS, MESSAGES = "bench", 8, 200


class Bench:
    def __init__(self, base: str, key: str, nats_url: str, password: str) -> None:
        self.base, self.key, self.nats_url, self.password = base, key, nats_url, password

    def auth(self, user: str) -> dict[str, str]:
        token = mint(self.key, org=ORG, user=user, now=int(time.time()))
        return {"Authorization": f"Bearer {token}"}

    async def run(self) -> dict[str, list[float]]:
        people = [f"{ORG}/member{i}" for i in range(MEMBERS)]
        connector = aiohttp.TCPConnector(limit=0)  # the streams hold their connections
        async with aiohttp.ClientSession(self.base, connector=connector) as http:
            ada = self.auth(people[0])
            body = {"title": "bench", "members": people[1:]}
            async with http.post("/v1/rooms", json=body, headers=ada) as r:
                assert r.status == 201, await r.text()
                room = (await r.json())["id"]
            heard: dict[int, float] = {}
            nc = await nats.connect(
                self.nats_url, user=OPERATOR, password=self.password,
                inbox_prefix=inbox_prefix(OPERATOR),
            )  # fmt: skip

            async def on_live(msg) -> None:
                heard[msgspec.json.decode(msg.data)["seq"]] = time.perf_counter()

            await nc.subscribe(rooms.live_subjects(room, people[0])[0], cb=on_live)
            seen: dict[int, list[float]] = {}
            opened = asyncio.Event()
            streams_open = 0

            async def member(user: str) -> None:
                nonlocal streams_open
                path = f"/v1/rooms/{room}/messages/stream"
                async with http.get(path, headers=self.auth(user), timeout=None) as r:
                    assert r.status == 200, await r.text()
                    streams_open += 1
                    if streams_open == MEMBERS:
                        opened.set()
                    async for line in r.content:
                        if line.startswith(b"id: "):
                            seen.setdefault(int(line[4:]), []).append(time.perf_counter())

            tasks = [asyncio.create_task(member(user)) for user in people]
            await asyncio.wait_for(opened.wait(), 30)
            await asyncio.sleep(1)  # each stream has read its (empty) history
            sent: dict[int, float] = {}
            for i in range(MESSAGES):
                start = time.perf_counter()
                async with http.post(
                    f"/v1/rooms/{room}/messages", json={"text": f"message {i}"}, headers=ada
                ) as r:
                    sent[(await r.json())["seq"]] = start
                await asyncio.sleep(0.02)
            await asyncio.sleep(2)  # the last events on their way; a missing one is counted
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await nc.close()
        missing = sum(MEMBERS - len(seen.get(seq, [])) for seq in sent)
        assert missing == 0, f"{missing} messages never reached their stream"
        return {
            "POST to the event at each member's stream": [
                t - start for seq, start in sent.items() for t in seen[seq]
            ],
            "floor: POST to the message heard live on the bus": [
                heard[seq] - start for seq, start in sent.items()
            ],
        }


def main() -> None:
    with stack() as s:
        base = s.behind_gateway("audit", "agents", "rooms")
        bench = Bench(base, s.home.jwt_key(), s.nats_url, s.passwords[OPERATOR])
        results = uvloop.run(bench.run())
    print(f"{MEMBERS} streams open on one room, {MESSAGES} messages one after another\n")
    print("| path | p50 ms | p99 ms |\n|---|---|---|")
    for name, samples in results.items():
        p50, p99 = (percentile(samples, q) * 1e3 for q in (50, 99))
        print(f"| {name} | {p50:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
