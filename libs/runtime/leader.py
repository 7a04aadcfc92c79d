"""Reads through a stream's leader: what decides an agent's authority is read here.

A direct get (nats-py's `kv.get`, runtime's `current`) may be answered by any replica, and
one that has not yet applied a write answers with the value before it: on three nodes, up
to 117 of 3,000 reads made as soon as their write was acknowledged (bench/exact_reads.py;
none on one node, none through the leader). The stream's leader has applied every write
it acknowledged, so a level lowered or a grant revoked holds from the moment its person is
told so. (During an election the read fails, with a 503 to ask again, rather than answer
from a replica that may be behind.)

The leader's message get answers one message, so what is under a filter (`acme.ada.*`) is
read from any replica, once that replica holds the newest message the leader holds there.
"""

import asyncio
from base64 import b64decode
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import APIError
from nats.js.kv import KeyValue

from libs.runtime.direct import batch_get
from libs.runtime.kv import GONE, Read, caught_up, current, current_and_newest, is_filter

__all__ = ["exact_reads", "latest", "newest_seq", "seen", "value_at", "written_since"]

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
    acknowledged before this read is in them. One request per key or filter, asked
    together."""
    found = await asyncio.gather(*(_under(kv, k) if is_filter(k) else _at(kv, k) for k in keys))
    return [entry for entries in found for entry in entries]


async def seen(kv: KeyValue, key: str, exact: Read) -> bytes | None:
    """The value at `key` from whichever replica answers, or, where that one has none, as
    `exact` reads it. A replica may be behind, never ahead, so for a key written once and
    never changed (a room) only an absence needs the leader's word, and the hot path stays
    one direct get; a key that changes (an agent's persona) may still be read as it was a
    moment before."""
    found = await current(kv, key)
    if not found and exact is not current:  # on one node the direct get was already exact
        found = await exact(kv, key)
    return found[0].value if found else None


async def value_at(js: JetStreamContext, bucket: str, key: str) -> bytes | None:
    """The value at `key` of the bucket named `bucket` as its stream's leader holds it;
    None if it holds none there, or a deletion's marker. For a reader that may read that
    one message of the bucket and nothing more (no handle on the bucket: that asks for
    its stream's info)."""
    stored = await _leader_last(js, f"KV_{bucket}", f"$KV.{bucket}.{key}")
    if stored is None or _gone(stored):
        return None
    return b64decode(stored.data)


async def newest_seq(js: JetStreamContext, stream: str, subject: str) -> int:
    """The sequence of the newest message on `subject` (or under a filter) that `stream`'s
    leader holds; 0 if none."""
    stored = await _leader_last(js, stream, subject)
    return 0 if stored is None else stored.seq


async def _at(kv: KeyValue, key: str) -> list[KeyValue.Entry]:
    stored = await _leader_last(kv._js, kv._stream, f"{kv._pre}{key}")
    if stored is None or _gone(stored):
        return []
    entry = KeyValue.Entry(
        bucket=kv._name,
        key=key,
        value=b64decode(stored.data),
        revision=stored.seq,
        delta=None,
        created=None,
        operation=None,
    )
    return [entry]


async def _under(kv: KeyValue, keys: str) -> list[KeyValue.Entry]:
    """Every entry under the filter `keys`, read from a replica that holds the newest
    message under it that the leader holds (a deletion's marker too, so a key just deleted
    is not read back from a replica that has not applied the deletion)."""
    newest = await newest_seq(kv._js, kv._stream, f"{kv._pre}{keys}")

    async def read() -> tuple[list[KeyValue.Entry], bool]:
        entries, held = await current_and_newest(kv, keys)
        return entries, held >= newest

    return await caught_up(read, keys)


async def written_since(kv: KeyValue, keys: str, seq: int) -> AsyncIterator[Msg]:
    """Each message under `keys` that the bucket stored after stream sequence `seq`,
    oldest first, up to the newest the stream's leader held there when asked: read in
    batches from any replica, one behind asked again (a 503 if none catches up)."""
    subject = f"{kv._pre}{keys}"
    newest = await newest_seq(kv._js, kv._stream, subject)
    while seq < newest:
        request = {"seq": seq + 1, "next_by_subj": subject, "batch": 256}

        async def batch(request: dict[str, object] = request) -> tuple[list[Msg], bool]:
            found, _ = await batch_get(kv._js._nc, kv._stream, request)
            return found, bool(found)

        for msg in await caught_up(batch, f"{subject} after {seq}"):
            yield msg
            seq = int(msg.headers["Nats-Sequence"])


async def _leader_last(js: JetStreamContext, stream: str, subject: str) -> _StoredMsg | None:
    """The newest message on `subject` (or under a filter) as the stream's leader holds it,
    a KV deletion's marker included; None if it holds none."""
    # The JetStream API's message get, asked and decoded here: nats-py's `get_msg` parses
    # each reply's headers with the email package, a large part of a decision's time.
    api = f"{js._prefix}.STREAM.MSG.GET.{stream}"
    request = msgspec.json.encode({"last_by_subj": subject})
    reply = _reply((await js._nc.request(api, request, timeout=_TIMEOUT_S)).data)
    if reply.message is None:
        error = reply.error or {"code": 500, "description": f"{api}: an empty reply"}
        if error.get("err_code") == _NO_MESSAGE_FOUND:
            return None
        raise APIError.from_error(error)  # its own kind: a 503 is asked again
    return reply.message


def _gone(stored: _StoredMsg) -> bool:
    """A deletion's or a purge's marker."""
    return bool(stored.hdrs) and _operation(b64decode(stored.hdrs)) in GONE


def _operation(headers: bytes) -> str | None:
    """A stored message's KV-Operation header (DEL, PURGE), if it has one."""
    for line in headers.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip() == b"KV-Operation":
            return value.strip().decode()
    return None
