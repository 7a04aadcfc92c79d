"""`put` with a `keep` longer than the server's TTL can say (its nanoseconds in an int64,
some 292 years) keeps the entry that long, on a real bus. Before, the server refused it
("invalid per-message TTL"), and a bot's question closing in the year 3093 failed the
rooms' handler with a 500 (found by tests/contracts/test_bus_edge.py)."""

import uuid
from datetime import timedelta

from nats.js.api import KeyValueConfig

from libs.runtime.kv import current, open_bucket, put


async def test_a_keep_past_what_the_server_can_say_is_kept_for_good(operator):
    bucket = f"long-{uuid.uuid4().hex[:8]}"
    js = operator.jetstream()
    kv = await open_bucket(js, KeyValueConfig(bucket=bucket))
    try:
        await put(kv, "question", b"asked", keep=timedelta(days=365 * 1067))
        await put(kv, "answer", b"soon", keep=timedelta(hours=1))
        assert sorted(e.key for e in await current(kv, "question", "answer")) == [
            "answer", "question"
        ]  # fmt: skip
    finally:
        await js.delete_key_value(bucket)
