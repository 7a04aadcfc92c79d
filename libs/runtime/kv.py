"""Reading what a KV bucket holds now under a key filter."""

import re

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import BucketNotFoundError
from nats.js.kv import KeyValue

__all__ = ["current", "key_token", "open_bucket"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_/-]")


def key_token(value: str) -> str:
    """`value` as one token of a KV key: anything a key may not hold, and `.` and `=`, is
    written `=XX` (its UTF-8 bytes in hex), so distinct values stay distinct keys."""
    return _UNSAFE.sub(lambda m: "".join(f"={b:02X}" for b in m[0].encode()), value)


async def current(kv: KeyValue, keys: str) -> list[KeyValue.Entry]:
    """The entries under `keys` (a subject wildcard such as `acme.ada.*`) as stored now.

    nats-py's `keys()` watches the whole bucket and filters by substring; a watch on the
    filter reads only what matches, and its first None marks the end of what is stored.
    """
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
    """The bucket, made with `config` if no replica has made it yet."""
    try:
        return await js.key_value(config.bucket)
    except BucketNotFoundError:
        return await js.create_key_value(config)
