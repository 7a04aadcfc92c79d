"""Scheduler replicas in this process, and a timer owner (the echo service) that reads its
fired timers from TIMERS with a durable consumer named for it."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import msgspec
import nats
import pytest

from libs.contracts import codec
from libs.contracts.problem import PROBLEM_HEADER, Problem
from libs.contracts.scheduler import CONTRACT, Fired
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
    """A service that owns timers: asks the scheduler, reads what fired."""

    def __init__(self, nc: nats.NATS, name: str, target: str) -> None:
        self.nc, self.name, self.target = nc, name, target

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

    async def fired(self, prefix: str, *, quiet: float = 1.5, limit: float = 60) -> list[Fired]:
        """Every delivery whose key starts with `prefix`, read until `quiet` s pass idle."""
        js = self.nc.jetstream()
        sub = await js.pull_subscribe(
            f"tether.timer.{self.name}.>", durable=self.name, stream="TIMERS"
        )
        found: list[Fired] = []
        deadline = asyncio.get_running_loop().time() + limit
        while asyncio.get_running_loop().time() < deadline:
            try:
                msgs = await sub.fetch(500, timeout=quiet)
            except TimeoutError:  # nats-py raises its own or asyncio's; both are TimeoutErrors
                break
            for msg in msgs:
                fired = msgspec.json.decode(msg.data, type=Fired)
                if fired.key.startswith(prefix):
                    found.append(fired)
                await msg.ack()
        await sub.unsubscribe()
        return found


def problem(reply: dict) -> Problem:
    return msgspec.convert(reply, Problem)


@pytest.fixture
async def scheduler(settings_for):
    async with replica(settings_for("scheduler")) as svc:
        yield svc


@pytest.fixture
async def owner(connect, scheduler):
    async with connect("echo") as nc:
        yield Owner(nc, "echo", "ping")
