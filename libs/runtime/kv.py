"""Reading what a KV bucket holds now under a key filter."""

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import BucketNotFoundError
from nats.js.kv import KeyValue

from libs.runtime.direct import DirectGetUnavailable, batch_get

__all__ = ["current", "open_bucket"]


_LIMIT = 10_000
_GONE = ("DEL", "PURGE")


async def current(kv: KeyValue, keys: str) -> list[KeyValue.Entry]:
    """The entries under `keys` (a subject wildcard such as `acme.ada.*`) as stored now.

    One batched direct get of the last message of each matching key: no consumer is made,
    so many readers at once cost the server nothing lasting. A bucket without direct gets,
    or more than 10,000 keys, is read with a watch on the filter instead (nats-py's own
    `keys()` watches the whole bucket and filters by substring).
    """
    # nats-py keeps the bucket's stream, key prefix and connection on the KeyValue.
    nc, stream, prefix = kv._js._nc, kv._stream, kv._pre
    try:
        found, more = await batch_get(
            nc, stream, {"multi_last": [f"{prefix}{keys}"], "batch": _LIMIT}
        )
    except DirectGetUnavailable:
        return await _watched(kv, keys)
    if more:
        return await _watched(kv, keys)
    return [
        KeyValue.Entry(
            bucket=kv._name,
            key=msg.headers["Nats-Subject"][len(prefix) :],
            value=msg.data,
            revision=int(msg.headers["Nats-Sequence"]),
            delta=None,
            created=None,
            operation=None,
        )
        for msg in found
        if msg.headers.get("KV-Operation") not in _GONE
    ]


async def _watched(kv: KeyValue, keys: str) -> list[KeyValue.Entry]:
    watcher = await kv.watch(keys, ignore_deletes=True)
    found = []
    try:
        async for entry in watcher:
            if entry is None:
                break
            found.append(entry)
    finally:
        await watcher.stop()
    return found


async def open_bucket(js: JetStreamContext, config: KeyValueConfig) -> KeyValue:
    """The bucket, made with `config` (and direct gets, which `current` reads by) if no
    replica has made it yet."""
    try:
        return await js.key_value(config.bucket)
    except BucketNotFoundError:
        config.direct = True
        return await js.create_key_value(config)
