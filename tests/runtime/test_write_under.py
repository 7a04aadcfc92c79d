"""`write_under`: a compare-and-set over every key under a filter, on a real bus. A key is
written only while nothing under the filter changed since the revision the writer read,
a deletion included; a key outside the filter does not count."""

import uuid

import pytest
from nats.js.api import KeyValueConfig

from libs.runtime.kv import Conflict, current, open_bucket, write_under
from libs.runtime.leader import newest_seq


async def test_a_write_lands_only_while_nothing_under_its_filter_changed(operator):
    bucket = f"under-{uuid.uuid4().hex[:8]}"
    js = operator.jetstream()
    kv = await open_bucket(js, KeyValueConfig(bucket=bucket))
    try:
        first = await write_under(kv, "acme.org.a", b"1", "acme.org.*", 0)
        with pytest.raises(Conflict):
            await write_under(kv, "acme.org.b", b"2", "acme.org.*", 0)  # read before a

        await kv.put("globex.org.x", b"elsewhere")
        second = await write_under(kv, "acme.org.b", b"2", "acme.org.*", first)

        await kv.delete("acme.org.a")
        with pytest.raises(Conflict):
            await write_under(kv, "acme.org.c", b"3", "acme.org.*", second)
        newest = await newest_seq(js, kv._stream, f"{kv._pre}acme.org.*")
        assert newest > second
        await write_under(kv, "acme.org.c", b"3", "acme.org.*", newest)

        # Read exactly (nats-py's `keys()` watches the bucket and, on a busy machine, once
        # ended before delivering any key: NoKeysError in a full run).
        stored = sorted(entry.key for entry in await current(kv, ">"))
        assert stored == ["acme.org.b", "acme.org.c", "globex.org.x"]
    finally:
        await js.delete_key_value(bucket)
