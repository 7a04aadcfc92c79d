"""Batched direct gets share one subscription per connection: many at once on one
connection each get their own replies, all of them and nothing of another's."""

import asyncio
import uuid

from nats.js.api import KeyValueConfig

from libs.runtime.kv import current, open_bucket


async def test_reads_at_once_on_one_connection_each_get_their_own(operator):
    bucket = f"direct-{uuid.uuid4().hex[:8]}"
    kv = await open_bucket(operator.jetstream(), KeyValueConfig(bucket=bucket))
    try:
        for prefix in range(20):
            for n in range(prefix + 1):
                await kv.put(f"p{prefix}.k{n}", f"{prefix}/{n}".encode())

        found = await asyncio.gather(*(current(kv, f"p{prefix}.*") for prefix in range(20)))

        for prefix, entries in enumerate(found):
            expected = {f"p{prefix}.k{n}": f"{prefix}/{n}".encode() for n in range(prefix + 1)}
            assert {e.key: e.value for e in entries} == expected
    finally:
        await operator.jetstream().delete_key_value(bucket)
