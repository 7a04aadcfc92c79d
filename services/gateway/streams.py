"""What the gateway's server-sent event streams share: the open ones, bounded per caller.

Each stream reads a queue of its own. The gateway keeps them all, so that a stopping gateway
can end them at once (END), one back on the bus can have them read what they missed
(BUS_BACK), and no caller holds more than their share: a stream keeps subscriptions (and
for a watch, consumers on the NATS server) for as long as it is open.

A stream told of changes by core NATS messages (a room's new message, a nudge to a pending
list) is told at most once: a word lost as its publisher's connection failed would leave
the stream behind until the next. So each reads again what it shows (AGAIN) when it has not
for `TETHER_STREAM_REREAD` seconds.
"""

import asyncio
import contextlib
import math
import time
from collections import Counter
from collections.abc import Iterator

from aiohttp import web
from prometheus_client import Gauge

from libs.contracts import codec
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from services.gateway.limits import who
from services.gateway.tokens import token_expired

__all__ = [
    "AGAIN",
    "BUS_BACK",
    "END",
    "EVENT_STREAM",
    "STREAMS",
    "OpenStreams",
    "bus_back",
    "close_streams",
    "head",
    "next_of",
    "refused_event",
]

END = b""
BUS_BACK = b"\x00bus-back"
AGAIN = b"\x00again"
KEEPALIVE_S = 15.0
OPEN = Gauge("tether_http_streams_open", "Server-sent event streams open in this gateway process.")
# A proxy in front (ingress-nginx buffers what it passes on by default) passes each event
# as it comes.
EVENT_STREAM = {"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}


class OpenStreams:
    """Every open stream's queue, and whose each is."""

    def __init__(self, per_caller: int) -> None:
        self._per_caller = per_caller
        self._whose: dict[asyncio.Queue[bytes], str] = {}
        self._held: Counter[str] = Counter()

    def open(self, p: Principal, queue: asyncio.Queue[bytes]) -> None:
        """`queue`'s stream kept, or 429 if its caller holds as many as they may already."""
        caller = self.may_open(p)
        self._whose[queue] = caller
        self._held[caller] += 1
        OPEN.inc()

    def may_open(self, p: Principal) -> str:
        """Whom `p`'s streams count as, if they may open one more; else 429."""
        caller = who(p)
        if self._held[caller] >= self._per_caller:
            raise Refused(
                "too-many-streams",
                429,
                f"you hold {self._per_caller} streams open on this gateway already; close one",
            )
        return caller

    def close(self, queue: asyncio.Queue[bytes]) -> None:
        if (caller := self._whose.pop(queue, None)) is not None:
            OPEN.dec()
            self._held[caller] -= 1
            if not self._held[caller]:
                del self._held[caller]

    def __iter__(self) -> Iterator[asyncio.Queue[bytes]]:
        return iter(list(self._whose))


STREAMS = web.AppKey("streams", OpenStreams)


def head(http: web.Request, p: Principal) -> web.StreamResponse:
    """A stream's HEAD: what its GET would be answered, checked as far as the GET is before
    it opens, and no stream opened."""
    http.app[STREAMS].may_open(p)
    return web.StreamResponse(headers=EVENT_STREAM)


async def next_of(
    queue: asyncio.Queue[bytes],
    response: web.StreamResponse,
    until: float,
    again_at: float = math.inf,
) -> bytes:
    """A stream's next item, with a keepalive written while none comes; AGAIN once
    `again_at` (on the monotonic clock) has passed first; END once `until`, its token's end,
    has passed, told to the client as a `refused` event."""
    while (left := until - time.time()) > 0:
        if (fresh := again_at - time.monotonic()) <= 0:
            return AGAIN
        try:
            return await asyncio.wait_for(queue.get(), min(KEEPALIVE_S, left, fresh))
        except TimeoutError:
            await response.write(b": keepalive\n\n")
    await response.write(refused_event(token_expired()))
    return END


def refused_event(refused: Refused) -> bytes:
    """The event a stream ends with when its caller is no longer taken."""
    return b"event: refused\ndata: %s\n\n" % codec.encode(refused.problem)


async def bus_back(app: web.Application) -> None:
    """The gateway is on the bus again: each stream is told, to read what it missed."""
    for queue in app[STREAMS]:
        with contextlib.suppress(asyncio.QueueFull):  # full, it is closing or nudged already
            queue.put_nowait(BUS_BACK)


async def close_streams(app: web.Application) -> None:
    """On shutdown: every stream ends now; clients resume with Last-Event-ID elsewhere."""
    for queue in app[STREAMS]:
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(END)
