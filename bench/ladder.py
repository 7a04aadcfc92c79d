"""The ladder, each service in its own process: decisions per second on the bus (50 in
flight) against the floor of the same replica's health round trip; a window's end to the
message stored, against the scheduler's own lateness for the same timers; and lowering a
level for a person with 100 open windows, against the same lowering with none open.

    .venv/bin/python -m bench.ladder
"""

import asyncio
import statistics
import time
from datetime import datetime

import aiohttp
import msgspec
import nats
import uvloop

from bench.common import flood, free_port, percentile, stack
from libs.contracts.ladder import DECIDE, ROUTE, SEND_MEANS
from libs.contracts.permissions import OPERATOR, inbox_prefix
from services.gateway.tokens import mint

IN_FLIGHT, SECONDS, FIRES, OPEN, ROUNDS = 50, 10, 200, 100, 5
ORG = "bench"


class Bench:
    def __init__(self, base: str, key: str, nats_url: str, passwords: dict[str, str]) -> None:
        self.base, self.key, self.nats_url, self.passwords = base, key, nats_url, passwords

    def auth(self, user: str) -> dict[str, str]:
        token = mint(self.key, org=ORG, user=user, now=int(time.time()))
        return {"Authorization": f"Bearer {token}"}

    async def connect(self, role: str) -> nats.NATS:
        return await nats.connect(
            self.nats_url, user=role, password=self.passwords[role], inbox_prefix=inbox_prefix(role)
        )

    async def run(self) -> dict[str, object]:
        async with aiohttp.ClientSession(self.base) as http:
            self.http = http
            agents = await self.connect("agents")
            decisions = await self.decisions(agents)
            fires = await self.fires(agents)
            lowering = await self.lowering(agents)
            await agents.close()
        return {"decisions": decisions, "fires": fires, "lowering": lowering}

    async def level(self, user: str, level: str, window: str | None = None) -> dict:
        if window:
            async with self.http.put(
                "/v1/ladder/window", json={"window": window}, headers=self.auth(user)
            ) as r:
                assert r.status == 200, await r.text()
        body = {"level": level, "acknowledge": SEND_MEANS}
        async with self.http.put("/v1/ladder", json=body, headers=self.auth(user)) as r:
            assert r.status == 200, await r.text()
            return await r.json()

    async def decisions(self, agents: nats.NATS) -> dict[str, dict[str, float]]:
        await self.level(f"{ORG}/ada", "send")
        body = msgspec.json.encode(
            {"org": ORG, "person": f"{ORG}/ada", "room": "r-0123456789abcdef", "transport": "sms"}
        )

        async def decide() -> None:
            reply = await agents.request(DECIDE.published_by("agents"), body, timeout=5)
            assert b'"send"' in reply.data, reply.data

        operator = await self.connect(OPERATOR)

        async def health() -> None:
            await operator.request("tether.ladder.health", b"{}", timeout=5)

        floor = await flood(health, seconds=SECONDS, in_flight=IN_FLIGHT)
        await operator.close()
        return {
            "floor: the ladder replica's health round trip": floor,
            "tether.ladder.decide": await flood(decide, seconds=SECONDS, in_flight=IN_FLIGHT),
        }

    async def room(self, user: str, messages: int) -> tuple[str, list[int]]:
        async with self.http.post(
            "/v1/rooms", json={"title": "bench"}, headers=self.auth(user)
        ) as r:
            assert r.status == 201, await r.text()
            room = (await r.json())["id"]
        seqs = []
        for i in range(messages):
            async with self.http.post(
                f"/v1/rooms/{room}/messages", json={"text": f"m{i}"}, headers=self.auth(user)
            ) as r:
                seqs.append((await r.json())["seq"])
        return room, seqs

    async def route(self, agents: nats.NATS, user: str, room: str, seq: int) -> dict:
        body = msgspec.json.encode(
            {
                "org": ORG,
                "person": user,
                "room": room,
                "reply_to": seq,
                "candidates": [f"reply to {seq}"],
            }
        )
        reply = await agents.request(ROUTE.published_by("agents"), body, timeout=30)
        return msgspec.json.decode(reply.data)

    async def fires(self, agents: nats.NATS) -> dict[str, list[float]]:
        """FIRES windows of one minute, then each sent message's store time less its due."""
        user = f"{ORG}/fay"
        await self.level(user, "send", "1m")
        room, seqs = await self.room(user, FIRES)
        due = {}
        for seq in seqs:
            routed = await self.route(agents, user, room, seq)
            due[seq] = datetime.fromisoformat(routed["due_at"])
        await asyncio.sleep(max(0.0, max(due.values()).timestamp() - time.time()) + 3)
        stored: dict[int, datetime] = {}
        after = 0
        while True:
            async with self.http.get(
                f"/v1/rooms/{room}/messages",
                params={"after": after, "limit": 200},
                headers=self.auth(user),
            ) as r:
                page = await r.json()
            for m in page["messages"]:
                if m["author_kind"] == "agent" and not m.get("notice"):
                    stored[m["reply_to"]] = datetime.fromisoformat(m["at"])
            if page["next"] is None:
                break
            after = page["next"]
        assert len(stored) == FIRES, f"{len(stored)} of {FIRES} sent"
        operator = await self.connect(OPERATOR)
        kv = await operator.jetstream().key_value("scheduler-timers")
        engine = []
        for key in await kv.keys():
            if key.startswith("ladder.w."):
                timer = msgspec.json.decode((await kv.get(key)).value)
                if timer.get("late_ms") is not None:
                    engine.append(timer["late_ms"] / 1e3)
        await operator.close()
        ladder = [(stored[s] - due[s]).total_seconds() for s in seqs]
        return {
            "window end → message stored": ladder,
            "floor: the scheduler's lateness for the same timers": engine,
        }

    async def lowering(self, agents: nats.NATS) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {f"{OPEN} open windows": [], "none open": []}
        for r in range(ROUNDS):
            for label, count in ((f"{OPEN} open windows", OPEN), ("none open", 0)):
                user = f"{ORG}/lou{r}-{count}"
                await self.level(user, "send", "1h")
                room, seqs = await self.room(user, count)
                await asyncio.gather(*(self.route(agents, user, room, s) for s in seqs))
                start = time.perf_counter()
                body = {"level": "confirm"}
                async with self.http.put("/v1/ladder", json=body, headers=self.auth(user)) as r_:
                    changed = await r_.json()
                out[label].append(time.perf_counter() - start)
                assert changed["canceled_windows"] == count, changed
        return out


def main() -> None:
    with stack() as s:
        for name in ("audit", "agents", "scheduler", "rooms", "ladder"):
            s.service(name)
        port = free_port()
        s.gateway(port)
        bench = Bench(f"http://127.0.0.1:{port}", s.home.jwt_key(), s.nats_url, s.passwords)
        results = uvloop.run(bench.run())

    print(f"decisions, {IN_FLIGHT} in flight on the bus (agents' credential), {SECONDS} s each")
    print("| path | per second | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for name, m in results["decisions"].items():  # type: ignore[union-attr]
        print(f"| {name} | {m['rps']:,.0f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} |")
    print(f"\n{FIRES} one-minute windows of one person, due within a few seconds of each other")
    print("| measure | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|")
    for name, values in results["fires"].items():  # type: ignore[union-attr]
        ms = [v * 1e3 for v in values]
        print(f"| {name} | {percentile(ms, 50):.1f} | {percentile(ms, 99):.1f} | {max(ms):.1f} |")
    print(f"\nPUT /v1/ladder lowering send to confirm, {ROUNDS} rounds")
    print("| person has | each round ms | median ms |")
    print("|---|---|---|")
    for name, values in results["lowering"].items():  # type: ignore[union-attr]
        each = ", ".join(f"{v * 1e3:.0f}" for v in values)
        print(f"| {name} | {each} | {statistics.median(values) * 1e3:.0f} |")


if __name__ == "__main__":
    main()
