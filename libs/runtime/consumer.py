"""Reading a stream with a durable pull consumer shared by a service's replicas.

Each message is handled once it is fetched; it is acked when its handler returns and
re-delivered (to this or another replica) when the handler raises or the replica dies,
unless it cannot be decoded or its handler refuses it: then it is dropped, logged.
Handlers must therefore be safe to repeat.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from libs.contracts.problem import Refused

__all__ = ["Consumer"]

_log = logging.getLogger(__name__)
_BATCH = 256


class Consumer:
    def __init__(
        self,
        js: JetStreamContext,
        *,
        stream: str,
        durable: str,
        subjects: Sequence[str],
        handle: Callable[[Msg], Awaitable[None]],
        in_order: bool = False,
        max_in_flight: int = 64,
        ack_wait: float = 30,
    ) -> None:
        """`in_order` handles one message at a time across every replica (max_ack_pending
        1), for a reader whose state depends on the order it reads in. A message a replica
        took and never acked goes to another after `ack_wait` seconds."""
        self._js, self._stream, self._durable = js, stream, durable
        self._subjects, self._handle = list(subjects), handle
        self._pending = 1 if in_order else max_in_flight
        self._ack_wait = ack_wait
        self._slots = asyncio.Semaphore(self._pending)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()

    async def run(self) -> None:
        """Fetch and handle until `stop()`, then finish what is in hand."""
        config = ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self._ack_wait,
            max_ack_pending=self._pending,
            filter_subjects=self._subjects if len(self._subjects) > 1 else None,
        )
        sub = await self._js.pull_subscribe(
            self._subjects[0] if len(self._subjects) == 1 else "",
            durable=self._durable,
            stream=self._stream,
            config=config,
        )
        while not self._stop.is_set():
            try:
                msgs = await sub.fetch(min(self._pending, _BATCH), timeout=0.5)
            except TimeoutError:  # nothing new
                continue
            except Exception:  # the bus is reconnecting: try again shortly
                _log.warning("fetch failed", exc_info=True, extra={"durable": self._durable})
                await asyncio.sleep(0.5)
                continue
            for msg in msgs:
                await self._slots.acquire()
                task = asyncio.create_task(self._one(msg))
                self._tasks.add(task)
                task.add_done_callback(self._done)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await sub.unsubscribe()

    def stop(self) -> None:
        self._stop.set()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def _one(self, msg: Msg) -> None:
        try:
            await self._handle(msg)
            await msg.ack()
        except (msgspec.DecodeError, msgspec.ValidationError, Refused) as exc:
            # Handling it again would refuse it again: say why, once, and drop it.
            _log.warning(
                "message refused; dropped",
                extra={"subject": msg.subject, "durable": self._durable, "error": str(exc)},
            )
            await msg.term()
        except Exception:
            _log.exception(
                "handling failed; it will be re-delivered",
                extra={"subject": msg.subject, "durable": self._durable},
            )
            await msg.nak(delay=1)
