"""`ended`: tasks cancelled until they stop, even one that drops a cancel as nats-py's
`wait_for` does on Python 3.11 (see libs/runtime/tasks)."""

import asyncio

from libs.runtime.tasks import ended
from tests.support import deaf_once


async def test_every_task_is_ended_though_one_drops_a_cancel_and_one_raised():
    heard: list[asyncio.CancelledError] = []

    async def failing() -> None:
        raise RuntimeError("failed before it was stopped")

    deaf = asyncio.create_task(deaf_once(heard))
    sleeping = asyncio.create_task(asyncio.sleep(3600))
    failed = asyncio.create_task(failing())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(ended(deaf, sleeping, failed))
    # Waited on without a cancel of its own, which would reach the tasks and end them.
    done, _ = await asyncio.wait({stopping}, timeout=5)
    if not done:
        stopping.cancel()
    assert done, "still waiting 5 s on"
    assert stopping.exception() is None
    assert deaf.cancelled() and len(heard) == 2
    assert sleeping.cancelled()
    assert isinstance(failed.exception(), RuntimeError)
