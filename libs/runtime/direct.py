"""JetStream's batched direct get: many stored messages in one request, no consumer made.

The server answers with one message per hit and ends with a status message (204 end of
batch; 404 when nothing matched), so a read of a page or of a key prefix costs one round
trip and leaves nothing behind on the server.
"""

import json

from nats.aio.client import Client
from nats.aio.msg import Msg

__all__ = ["DirectGetUnavailable", "batch_get"]


class DirectGetUnavailable(Exception):
    """The stream does not serve direct gets (made without allow_direct)."""


async def batch_get(nc: Client, stream: str, request: dict[str, object]) -> tuple[list[Msg], int]:
    """The messages `request` selects (`batch` and `seq`/`next_by_subj` or `multi_last`),
    and how many more matched than the batch held."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    found: list[Msg] = []
    pending = 0
    try:
        await nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(request).encode(), reply=inbox)
        while True:
            msg = await sub.next_msg(timeout=5)
            headers = msg.headers or {}
            status = headers.get("Status")
            if status == "503":
                raise DirectGetUnavailable(stream)
            if status:  # 204 end of batch, 404 nothing matched
                return found, pending
            found.append(msg)
            pending = int(headers.get("Nats-Num-Pending", "0"))
    finally:
        await sub.unsubscribe()
