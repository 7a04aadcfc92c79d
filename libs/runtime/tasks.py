"""Ending a task for certain.

nats-py waits under `asyncio.wait_for` (a request's reply, a dial, a watcher's next
update). On Python 3.11 a cancel that comes as what it waits for arrives is dropped:
`wait_for` returns that instead, and a loop around it carries on. A task cancelled once,
and then awaited, was waited on for ever (a gateway that never reached its bus, SIGTERM'd,
was still running 10 s on in CI).
"""

import asyncio
from typing import Any

__all__ = ["ended"]

# A task cancelled is waited on this long before it is cancelled again.
CANCEL_AGAIN_S = 0.1


async def ended(*tasks: "asyncio.Future[Any]") -> None:
    """Cancel each task until it is done. What one raised is taken, not raised: it was
    being stopped."""
    running = {task for task in tasks if not task.done()}
    while running:
        for task in running:
            task.cancel()
        _, running = await asyncio.wait(running, timeout=CANCEL_AGAIN_S)
    for task in tasks:
        if not task.cancelled():
            task.exception()
