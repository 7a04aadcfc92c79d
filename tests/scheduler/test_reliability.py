"""Kill -9 the server, or a replica, with timers pending: every timer fires exactly once."""

import asyncio
import logging
import os
import signal
import sys
from collections import Counter
from datetime import timedelta

import nats
from nats.js.errors import NotFoundError

from libs.contracts import scheduler
from libs.contracts.permissions import inbox_prefix
from libs.contracts.scheduler import ENGINE
from libs.runtime.settings import Settings
from libs.stack.processes import spawn, stop_all
from libs.stack.servers import free_port, start_nats
from services.scheduler.main import serve
from tests.personal.conftest import eventually
from tests.scheduler.conftest import Owner, now, replica
from tests.support import serving_across_a_link


async def _connect(url: str, passwords: dict[str, str], name: str) -> nats.NATS:
    return await nats.connect(
        url, user=name, password=passwords[name], inbox_prefix=inbox_prefix(name),
        max_reconnect_attempts=-1, reconnect_time_wait=0.5,
    )  # fmt: skip


async def _owner(url: str, passwords: dict[str, str], name: str, target: str) -> Owner:
    nc, engine = await asyncio.gather(
        _connect(url, passwords, name), _connect(url, passwords, "scheduler")
    )
    return Owner(nc, name, target, engine)


async def test_kill_9_of_the_server_loses_no_timer_and_fires_none_twice(stack, tmp_path, org):
    config = dict(stack.nats_config)
    port = free_port()
    config |= {"listen": f"127.0.0.1:{port}", "http": f"127.0.0.1:{free_port()}",
               "jetstream": {"store_dir": str(tmp_path / "js")}}  # fmt: skip
    server = await asyncio.to_thread(start_nats, config, tmp_path / "nats.json")
    url = f"nats://127.0.0.1:{port}"
    settings = Settings(service="scheduler", nats_url=url, nats_user="scheduler",
                        nats_password=stack.passwords["scheduler"], metrics_port=0)  # fmt: skip
    try:
        async with replica(settings):
            owner = await _owner(url, stack.passwords, "echo", "ping")
            # Due from 2 s on: a schedule asked on a busy 2-core machine can take the
            # scheduler most of a second (due from 0.8 s, a fresh `make test` saw the first
            # refused as due in the past), and one taken after it is due is refused (422).
            start = now()
            due = {f"{org}.{i}": start + timedelta(milliseconds=2000 + 40 * i) for i in range(100)}
            await asyncio.gather(*(owner.schedule(k, d) for k, d in due.items()))
            some_fired = start + timedelta(seconds=2.4)  # most are pending
            await asyncio.sleep(max(0.0, (some_fired - now()).total_seconds()))
            server.send_signal(signal.SIGKILL)
            server.wait()
            killed = now()
            await asyncio.sleep(3)  # the rest fall due while the server is down
            back = now()
            server = await asyncio.to_thread(start_nats, config, tmp_path / "nats.json")
            fired = await owner.fired(org)
            await owner.close()
    finally:
        stop_all([server])
    counts = Counter(f.key for f in fired)
    assert dict(counts) == {k: 1 for k in due}
    # Due while the server was down: fired once it was back, and marked with how late.
    down = [f for f in fired if killed < f.due_at < back]
    assert down
    assert all(f.fired_at >= back and f.late_ms == _ms(f.fired_at - f.due_at) for f in down)


def _ms(delta: timedelta) -> float:
    return round(delta.total_seconds() * 1000, 3)


async def test_kill_9_of_one_of_two_replicas_loses_no_timer_and_fires_none_twice(stack, org):
    env = stack.env(NATS_USER="scheduler", NATS_PASSWORD=stack.passwords["scheduler"],
                    TETHER_METRICS_PORT="0", TETHER_LOG_LEVEL="WARNING")  # fmt: skip
    argv = [sys.executable, "-m", "services.scheduler.main"]
    replicas = [spawn(argv, name=f"scheduler-{i}", env=env) for i in range(2)]
    owner = await _owner(stack.nats_url, stack.passwords, "scheduler", "probe")
    try:
        due_reader = owner.engine.jetstream()
        async with asyncio.timeout(30):  # both replicas up: each waits on the due consumer
            while True:
                try:
                    info = await due_reader.consumer_info(ENGINE.name, "scheduler")
                except NotFoundError:  # the first replica has not made it yet
                    info = None
                if info is not None and info.num_waiting >= 2:
                    break
                await asyncio.sleep(0.1)
        # Due from 2 s on: 400 asked at once can take a busy 2-core machine over a second
        # to take, and one taken after it is due is refused (422), never fired.
        start = now()
        due = {f"{org}.{i}": start + timedelta(milliseconds=2000 + 10 * i) for i in range(400)}
        await asyncio.gather(*(owner.schedule(k, d) for k, d in due.items()))
        under_way = start + timedelta(seconds=3)  # a quarter due, firing on both replicas
        await asyncio.sleep(max(0.0, (under_way - now()).total_seconds()))
        os.kill(replicas[0].pid, signal.SIGKILL)
        replicas[0].wait()
        fired = await owner.fired(org)  # what the dead one held comes back after 10 s
    finally:
        await owner.close()
        stop_all(replicas)
    counts = Counter(f.key for f in fired)
    assert dict(counts) == {k: 1 for k in due}
    assert replicas[0].returncode == -signal.SIGKILL


async def test_a_scheduler_that_loses_the_bus_as_it_starts_keeps_on(settings_for, caplog):
    """Its probe of its own resolution finding the bus away stopped the whole process.
    Housekeeping that finds it away says so with no traceback: the next round does it, as
    a reader's message is handled again."""
    async with serving_across_a_link(scheduler.CONTRACT, settings_for("scheduler"), serve) as link:
        link.cut()

        async def said() -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.getMessage().startswith("purge of")]

        (record, *_) = await eventually(said, timeout=15)
    assert record.exc_info is None and "not connected to NATS" in record.error
