"""Scheduler replicas in this process, and a timer owner (the echo service) that reads its
fired timers from TIMERS with a durable consumer named for it, once nothing more can fire."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import msgspec
import nats
import pytest
from nats.errors import NoRespondersError
from nats.js.errors import ServiceUnavailableError

from libs.contracts import codec
from libs.contracts.problem import PROBLEM_HEADER, Problem
from libs.contracts.scheduler import CONTRACT, ENGINE, Fired
from libs.runtime.service import Service
from libs.runtime.settings import Settings
from services.scheduler.firing import Firing
from services.scheduler.handlers import Handlers
from services.scheduler.resolution import Lateness
from services.scheduler.store import open_store

TARGETS = {"echo": ("ping",), "scheduler": ("probe",)}


def now() -> datetime:
    return datetime.now(UTC)


@contextlib.asynccontextmanager
async def replica(settings: Settings) -> AsyncIterator[Service]:
    """A scheduler replica: its subjects and its fire path, until the block ends."""
    async with Service(CONTRACT, settings, signals=False) as svc:
        timers, engine = await open_store(svc.js)
        lateness = Lateness()
        handlers = Handlers(timers, engine, lateness, targets=TARGETS, clock=now)
        firing = Firing(timers, engine, lateness, clock=now)
        serve = asyncio.create_task(svc.serve(handlers.table(), [firing.consumer(svc.js)]))
        await asyncio.wait_for(svc.serving.wait(), 10)
        try:
            yield svc
        finally:
            svc.stop()
            await serve


class Owner:
    """A service that owns timers: asks the scheduler, reads what fired. `engine` is a
    connection with the scheduler's credential, to see the state of its engine."""

    def __init__(self, nc: nats.NATS, name: str, target: str, engine: nats.NATS) -> None:
        self.nc, self.name, self.target, self.engine = nc, name, target, engine

    async def close(self) -> None:
        await asyncio.gather(self.nc.close(), self.engine.close())

    async def ask(self, verb: str, body: object) -> tuple[int | None, dict]:
        """(problem status or None, the reply as JSON)."""
        payload = body if isinstance(body, bytes) else codec.encode(body)
        reply = await self.nc.request(f"tether.scheduler.{verb}.{self.name}", payload, timeout=10)
        status = (reply.headers or {}).get(PROBLEM_HEADER)
        return (int(status) if status else None), msgspec.json.decode(reply.data)

    async def schedule(self, key: str, due: datetime, payload: object = None) -> dict:
        body = {"key": key, "due_at": due.isoformat(), "target": self.target, "payload": payload}
        status, reply = await self.ask("schedule", body)
        assert status is None, reply
        return reply

    async def fired(self, prefix: str, *, limit: float = 60) -> list[Fired]:
        """Every delivery whose key starts with `prefix`, read once no more can come."""
        deadline = asyncio.get_running_loop().time() + limit
        while not await self._settled(prefix):
            assert asyncio.get_running_loop().time() < deadline, f"{prefix}: still under way"
            await asyncio.sleep(0.1)
        js = self.nc.jetstream()
        sub = await js.pull_subscribe(
            f"tether.timer.{self.name}.>", durable=self.name, stream="TIMERS"
        )
        found: list[Fired] = []
        while (await sub.consumer_info()).num_pending:
            for msg in await sub.fetch(500, timeout=10):
                fired = msgspec.json.decode(msg.data, type=Fired)
                if fired.key.startswith(prefix):
                    found.append(fired)
                await msg.ack()
        await sub.unsubscribe()
        return found

    async def _settled(self, prefix: str) -> bool:
        """Whether nothing of `prefix` can be delivered any more: none of its timers is
        pending, none of its schedules is held, and the scheduler has acknowledged every due
        message it was handed (it acknowledges one only after its delivery is stored, and
        one a dead replica held stays unacknowledged until another has handled it). Not
        yet, while a server just back or a replica not yet serving cannot say."""
        try:
            return await self._nothing_left(prefix)
        except (NoRespondersError, TimeoutError, ServiceUnavailableError):
            return False

    async def _nothing_left(self, prefix: str) -> bool:
        _, listed = await self.ask("list", {"prefix": prefix})
        if any(t["state"] == "pending" for t in listed["timers"]):
            return False
        js = self.engine.jetstream()
        held = f"scheduler.at.{self.name}.{prefix}.>"
        if (await js.stream_info(ENGINE.name, subjects_filter=held)).state.subjects:
            return False
        due = await js.consumer_info(ENGINE.name, "scheduler")
        return due.num_pending == 0 and due.num_ack_pending == 0


def problem(reply: dict) -> Problem:
    return msgspec.convert(reply, Problem)


@pytest.fixture
async def scheduler(settings_for):
    async with replica(settings_for("scheduler")) as svc:
        yield svc


@pytest.fixture
async def owner(connect, scheduler):
    async with connect("echo") as nc, connect("scheduler") as engine:
        yield Owner(nc, "echo", "ping", engine)
