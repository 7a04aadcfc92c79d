"""Reading what a KV bucket holds now under a key filter."""

from nats.js.kv import KeyValue

__all__ = ["current"]


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
