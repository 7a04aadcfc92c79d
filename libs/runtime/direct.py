"""JetStream's batched direct get: many stored messages in one request, no consumer made.

The server answers with one message per hit and ends with a status message (204 end of
batch; 404 when nothing matched), so a read of a page or of a key prefix costs one round
trip and leaves nothing behind on the server.
"""

import asyncio
import itertools
import json
import weakref

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from libs.runtime.bus import NotSent

__all__ = ["DirectGetRefused", "DirectGetUnavailable", "TooManyResults", "batch_get", "last_get"]

_TIMEOUT_S = 5.0


class DirectGetUnavailable(Exception):
    """No one answered a direct get of the stream: it is not made yet, its leader is being
    elected, or it was made without allow_direct."""


class DirectGetRefused(Exception):
    """The server ended the batch with a status other than its end or "nothing matched":
    what came before it is not the whole answer."""


class TooManyResults(DirectGetRefused):
    """More subjects match than one batch may answer (413; 1,024 for `multi_last` on
    nats-server 2.15), and the server answers none of them."""


class _Replies:
    """Every batched get on one connection is answered on one wildcard subscription, each
    told apart by the last token of its inbox: a read neither makes nor drops a
    subscription, which would change the server's interest graph twice per read."""

    def __init__(self, nc: Client) -> None:
        self._nc, self._prefix = nc, nc.new_inbox()
        self._tokens = itertools.count()
        self._waiting: dict[str, asyncio.Queue[Msg]] = {}
        self._sub: Subscription | None = None
        self._subscribing = asyncio.Lock()

    async def inbox(self) -> tuple[str, asyncio.Queue[Msg]]:
        """A new inbox and the queue its replies arrive on; `close` it when done."""
        if self._sub is None:
            async with self._subscribing:
                if self._sub is None:
                    self._sub = await self._nc.subscribe(f"{self._prefix}.*", cb=self._deliver)
        token = str(next(self._tokens))
        queue = self._waiting[token] = asyncio.Queue()
        return f"{self._prefix}.{token}", queue

    def close(self, inbox: str) -> None:
        self._waiting.pop(inbox.rpartition(".")[2], None)

    async def _deliver(self, msg: Msg) -> None:
        queue = self._waiting.get(msg.subject.rpartition(".")[2])
        if queue is not None:  # else the read has given up on it
            queue.put_nowait(msg)


_replies: "weakref.WeakKeyDictionary[Client, _Replies]" = weakref.WeakKeyDictionary()


async def batch_get(nc: Client, stream: str, request: dict[str, object]) -> tuple[list[Msg], int]:
    """The messages `request` selects (`batch` and `seq`/`next_by_subj` or `multi_last`),
    and how many more matched than the batch held."""
    return await _get(nc, stream, request, batched=True)


async def last_get(nc: Client, stream: str, subject: str) -> list[Msg]:
    """The last message on `subject` (a key's), if any: one reply and no end of batch,
    the form of a direct get the server answers most cheaply (a `multi_last` over one
    subject costs it more)."""
    found, _ = await _get(nc, stream, {"last_by_subj": subject}, batched=False)
    return found


async def _get(
    nc: Client, stream: str, request: dict[str, object], *, batched: bool
) -> tuple[list[Msg], int]:
    if not nc.is_connected:  # held until the server is back, it would wait out its time
        raise NotSent(f"not connected to NATS; the direct get of {stream} not sent")
    replies = _replies.get(nc) or _replies.setdefault(nc, _Replies(nc))
    inbox, queue = await replies.inbox()
    found: list[Msg] = []
    pending = 0
    loop = asyncio.get_running_loop()
    try:
        await nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(request).encode(), reply=inbox)
        # One deadline for the read, pushed on by each message: a long batch may take its
        # time, a silent server may not.
        async with asyncio.timeout(_TIMEOUT_S) as deadline:
            while True:
                msg = await queue.get()
                headers = msg.headers or {}
                status = headers.get("Status")
                if status in ("204", "404"):  # the end of the batch; nothing matched
                    return found, pending
                if status == "503":
                    raise DirectGetUnavailable(f"no one serves direct gets of {stream} yet")
                if status:
                    refused = f"{stream}: {status} {headers.get('Description', '')}".strip()
                    raise (TooManyResults if status == "413" else DirectGetRefused)(refused)
                found.append(msg)
                if not batched:
                    return found, 0
                pending = int(headers.get("Nats-Num-Pending", "0"))
                deadline.reschedule(loop.time() + _TIMEOUT_S)
    finally:
        replies.close(inbox)
