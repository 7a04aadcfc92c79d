"""What a KV bucket holds under a key filter, read by a consumer of the read's own: for a
bucket without direct gets, or more keys than one batched direct get answers (1,024)."""

import asyncio
import contextlib
import json

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.kv import KeyValue

from libs.contracts.problem import Refused, Unavailable
from libs.runtime.direct import DirectGetRefused

__all__ = ["last_entries"]

# How long a read's consumer outlives the read should its deletion be lost (nats-py's
# default is five minutes): read often, as a person's pending list is, consumers would
# pile up on the server, which refuses a stream's thousand-and-first.
_CONSUMER_KEPT_S = 1.0
_PULL_TIMEOUT_S = 5.0
# A pull answered no responders, or its consumer deleted or its leader changed under it.
_AWAY = ("503", "409")


async def last_entries(kv: KeyValue, keys: str) -> list[KeyValue.Entry]:
    """The last entry of each key under `keys`, by a pull consumer of the read's own.

    Nothing is delivered to a pull consumer before it is asked, so the count pending its
    making answers is the whole of what there is to read, and the read ends on the last
    of it. (A watch ends on its consumer's "none pending", and that answer can overtake
    the last stored entry on the wire: the read would end without it.)"""
    js, stream = kv._js, kv._stream
    config = ConsumerConfig(
        filter_subject=f"{kv._pre}{keys}",
        deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
        ack_policy=AckPolicy.NONE,
        inactive_threshold=_CONSUMER_KEPT_S,
        mem_storage=True,
        num_replicas=1,
    )
    made = await js.add_consumer(stream, config)
    found: list[KeyValue.Entry] = []
    try:
        pending = made.num_pending or 0
        while pending:
            msgs = await _pulled(js._nc, stream, made.name, pending)
            if not msgs:  # what was pending went before it was read (a key's TTL, say)
                break
            found += [_entry(kv, msg) for msg in msgs]
            pending = msgs[-1].metadata.num_pending
    finally:
        with contextlib.suppress(nats.errors.Error):
            await js.delete_consumer(stream, made.name)
    return found


async def _pulled(nc: Client, stream: str, consumer: str, batch: int) -> list[Msg]:
    """Up to `batch` messages of `consumer` (one that takes no acks), in one pull that does
    not wait: what it has pending, to `batch`. (nats-py's `fetch` returns what has arrived
    when it looks, often one message, and pulls again for the rest: a pull per entry.)
    A delivery keeps its stored subject, so the pull has an inbox of its own."""
    found: list[Msg] = []
    queue: asyncio.Queue[Msg] = asyncio.Queue()

    async def deliver(msg: Msg) -> None:
        queue.put_nowait(msg)

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=deliver)
    loop = asyncio.get_running_loop()
    request = json.dumps({"batch": batch, "no_wait": True}).encode()
    try:
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", request, reply=inbox)
        # One deadline, pushed on by each message: a long pull may take its time, a
        # silent server may not.
        async with asyncio.timeout(_PULL_TIMEOUT_S) as deadline:
            while len(found) < batch:
                msg = await queue.get()
                status = (msg.headers or {}).get("Status")
                if status in ("404", "408"):  # nothing more pending
                    break
                if status in _AWAY:
                    # The consumer is not there to answer: its stream electing a leader, or
                    # the consumer gone (its inactivity outlived on a busy machine). A
                    # transient failure (503) to ask again, never a 500.
                    why = (msg.headers or {}).get("Description", "")
                    detail = f"{stream} {consumer}: {status} {why}; retry".replace("  ", " ")
                    raise Unavailable(Refused("catching-up", 503, detail).problem)
                if status:
                    raise DirectGetRefused(f"{stream} {consumer}: {status}")
                found.append(msg)
                deadline.reschedule(loop.time() + _PULL_TIMEOUT_S)
    finally:
        await sub.unsubscribe()
    return found


def _entry(kv: KeyValue, msg: Msg) -> KeyValue.Entry:
    return KeyValue.Entry(
        bucket=kv._name,
        key=msg.subject[len(kv._pre) :],
        value=msg.data,
        revision=msg.metadata.sequence.stream,
        delta=msg.metadata.num_pending,
        created=msg.metadata.timestamp,
        operation=(msg.headers or {}).get("KV-Operation"),
    )
