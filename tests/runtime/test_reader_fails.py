"""A reader that cannot start stops its service loudly, never leaving it serving with
nothing read (found when a reader's consumer was never made and nothing said so)."""

import asyncio

from libs.runtime.consumer import Consumer, events
from libs.runtime.service import Service
from tests.support import ECHO


async def test_a_reader_that_cannot_make_its_consumer_stops_the_service(settings_for):
    async with Service(ECHO, settings_for("echo"), signals=False) as svc:

        async def handle(_: object) -> None: ...

        # A stream that does not exist: its consumer cannot be made.
        reader = Consumer(
            svc.js,
            stream="NO_SUCH_STREAM",
            durable="echo",
            subjects=["tether.timer.echo.ping"],
            read=events({"tether.timer.echo.ping": dict}),
            handle=handle,
        )
        serving = asyncio.create_task(svc.serve({}, [reader]))
        done, _ = await asyncio.wait({serving}, timeout=30)
        assert serving in done, "the service went on serving with its reader stopped"
        assert serving.exception() is not None
