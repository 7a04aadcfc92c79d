"""On three nodes a direct get may be answered by a replica that has not yet applied an
acknowledged write; `latest` reads through the stream's leader (a filter, from a replica
that holds what the leader holds under it), so a read made as soon as a write is
acknowledged sees it, from the writer's connection and from another node's."""

from nats.js.api import KeyValueConfig

from libs.runtime.kv import current, open_bucket
from libs.runtime.leader import exact_reads, latest
from tests.support import asked_again, operator_on

WRITES = 2000  # bench/exact_reads.py: 16 to 117 of 3,000 direct gets made at once missed


async def test_a_read_through_the_leader_sees_every_acknowledged_write(two_nodes):
    writer, other = two_nodes
    kv = await open_bucket(
        writer.jetstream(), KeyValueConfig(bucket="latest", history=1, replicas=3)
    )
    elsewhere = await other.jetstream().key_value("latest")
    missed = []
    for i in range(WRITES):
        written = str(i).encode()
        revision = await asked_again(kv.put, "level", written)
        for bucket in (kv, elsewhere):
            (entry,) = await asked_again(latest, bucket, "level")
            if (entry.value, entry.revision) != (written, revision):
                missed.append((i, entry.value))
    assert missed == []

    await kv.delete("level")
    assert await latest(kv, "level") == []
    assert await latest(elsewhere, "level", "never-written") == []


async def test_a_filter_read_through_the_leader_sees_every_acknowledged_write(two_nodes):
    """Writes and deletions under a filter, each read back under it at once from another
    node: a key just written is there with its value, one just deleted is not."""
    writer, other = two_nodes
    kv = await open_bucket(
        writer.jetstream(), KeyValueConfig(bucket="filtered", history=1, replicas=3)
    )
    elsewhere = await other.jetstream().key_value("filtered")
    held: dict[str, bytes] = {}
    missed = []
    for i in range(WRITES):
        key = f"open.acme.w{i % 7}"
        if i % 3 == 2 and key in held:
            await asked_again(kv.delete, key)
            del held[key]
        else:
            held[key] = str(i).encode()
            await asked_again(kv.put, key, held[key])
        read = await asked_again(latest, elsewhere, "open.acme.*", "never.written.*")
        if {e.key: e.value for e in read} != held:
            missed.append(i)
    assert missed == []


async def test_a_bucket_is_read_by_the_replicas_its_stream_has(three_nodes):
    (first, _, _), password = three_nodes
    nc = await operator_on(first, password)
    try:
        js = nc.jetstream()
        replicated = await open_bucket(js, KeyValueConfig(bucket="three", replicas=3))
        single = await open_bucket(js, KeyValueConfig(bucket="one", replicas=1))
        assert await exact_reads(replicated) is latest
        assert await exact_reads(single) is current
    finally:
        await nc.close()
