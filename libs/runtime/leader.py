"""Reads through a stream's leader: what decides an agent's authority is read here.

A direct get (nats-py's `kv.get`, runtime's `current`) may be answered by any replica, and
one that has not yet applied a write answers with the value before it: on three nodes, up
to 117 of 3,000 reads made as soon as their write was acknowledged (bench/exact_reads.py;
none on one node, none through the leader). The stream's leader has applied every write
it acknowledged, so a level lowered or a grant revoked holds from the moment its person is
told so. (During an election the read fails, with a 503 to ask again, rather than answer
from a replica that may be behind.)
"""

import asyncio
from base64 import b64decode
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from nats.js.errors import APIError
from nats.js.kv import KeyValue

from libs.runtime.kv import GONE, current

__all__ = ["Read", "exact_reads", "latest"]

Read = Callable[..., Awaitable[list[KeyValue.Entry]]]  # (kv, *keys) -> the entries found

_TIMEOUT_S = 5.0
_NO_MESSAGE_FOUND = 10037  # the JetStream API's err_code; a missing stream is another 404


class _StoredMsg(msgspec.Struct):
    seq: int
    data: str = ""
    hdrs: str = ""


class _MsgGetReply(msgspec.Struct):
    message: _StoredMsg | None = None
    error: dict[str, Any] | None = None


_reply = msgspec.json.Decoder(_MsgGetReply).decode


async def exact_reads(kv: KeyValue) -> Read:
    """How `kv` is read with every acknowledged write in what is read, by the replicas its
    stream has (not those a setting asked for: the bucket may have been made otherwise).
    One replica's direct gets are already (its one server applied the write before it
    acknowledged it), and one batched direct get is the cheapest read; a replicated
    bucket's reads go to its leader, which costs a decision about a fifth of its rate."""
    info = await kv._js.stream_info(kv._stream)
    return latest if info.config.num_replicas > 1 else current


async def latest(kv: KeyValue, *keys: str) -> list[KeyValue.Entry]:
    """The entries at `keys` as the bucket's stream leader holds them: every write
    acknowledged before this read is in them. One request per key, asked together."""

    # The JetStream API's message get, asked and decoded here: nats-py's `get_msg` parses
    # each reply's headers with the email package, a large part of a decision's time.
    api = f"{kv._js._prefix}.STREAM.MSG.GET.{kv._stream}"

    async def last(key: str) -> KeyValue.Entry | None:
        request = msgspec.json.encode({"last_by_subj": f"{kv._pre}{key}"})
        reply = _reply((await kv._js._nc.request(api, request, timeout=_TIMEOUT_S)).data)
        stored = reply.message
        if stored is None:
            error = reply.error or {"code": 500, "description": f"{api}: an empty reply"}
            if error.get("err_code") == _NO_MESSAGE_FOUND:
                return None
            raise APIError.from_error(error)  # its own kind: a 503 is asked again
        if stored.hdrs and _operation(b64decode(stored.hdrs)) in GONE:
            return None
        return KeyValue.Entry(
            bucket=kv._name,
            key=key,
            value=b64decode(stored.data),
            revision=stored.seq,
            delta=None,
            created=None,
            operation=None,
        )

    found = await asyncio.gather(*(last(k) for k in keys))
    return [entry for entry in found if entry is not None]


def _operation(headers: bytes) -> str | None:
    """A stored message's KV-Operation header (DEL, PURGE), if it has one."""
    for line in headers.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip() == b"KV-Operation":
            return value.strip().decode()
    return None
