"""A compare-and-set whose answer never came back (the writer's NATS node stalled, or its
link): the write may have landed. It was taken for one that failed, so a change made stood
in the audit trail as `.failed`, and a retry met its own write as a 409. Now it is asked
again, and is the write that landed, or a Conflict if another writer's landed first.

The lost answer is made by a TCP proxy between the writer and its server (`Link`), which
keeps what the server sends back for a while: past nats-py's wait (1 s here)."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from nats.js.api import KeyValueConfig
from nats.js.kv import KeyValue

from libs.contracts.permissions import OPERATOR
from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime.kv import (
    Conflict,
    current,
    delete,
    delete_at,
    open_bucket,
    put,
    remove,
    write_at,
    write_under,
)
from libs.runtime.replies import Replies
from tests.personal.conftest import eventually
from tests.support import Link, across_a_link, history

WAIT_S = 1.0  # nats-py's wait for an answer, on the writer's connection


@pytest.fixture
async def buckets(stack, operator) -> AsyncIterator[tuple[KeyValue, KeyValue, Link]]:
    """One bucket twice: as a writer across a Link sees it, and as everyone else does."""
    bucket = f"unanswered-{uuid.uuid4().hex[:8]}"
    js = operator.jetstream()
    kv = await open_bucket(js, KeyValueConfig(bucket=bucket, history=8))
    try:
        async with across_a_link(stack.nats_url, OPERATOR, stack.passwords[OPERATOR]) as (
            nc,
            link,
        ):
            yield await nc.jetstream(timeout=WAIT_S).key_value(bucket), kv, link
    finally:
        await js.delete_key_value(bucket)


def deaf_until(link: Link, landed) -> asyncio.Task[None]:
    """The writer deaf from now until `landed()` holds and nats-py's wait has run out;
    awaited once the write is done, to fail there if `landed()` never held."""
    link.deafen()

    async def hear() -> None:
        await eventually(landed, timeout=10)
        await asyncio.sleep(WAIT_S * 1.5)
        link.hear()

    return asyncio.create_task(hear())


async def test_a_write_whose_answer_was_lost_is_the_write_that_landed(buckets):
    writer, kv, link = buckets
    base = await write_at(kv, "k", b"before", 0)

    async def landed() -> bool:
        return (await kv.get("k")).revision > base

    hearing = deaf_until(link, landed)
    revision = await write_at(writer, "k", b"mine", base)
    await hearing

    entry = await kv.get("k")
    assert (entry.value, entry.revision) == (b"mine", revision)
    assert [e.value for e in await history(kv, "k")] == [b"before", b"mine"]


async def test_one_landed_and_written_over_since_is_still_the_write_that_landed(buckets):
    writer, kv, link = buckets
    base = await write_at(kv, "k", b"before", 0)
    after: list[int] = []

    async def landed_and_written_over() -> bool:
        entry = await kv.get("k")
        if entry.revision > base and not after:
            after.append(await write_at(kv, "k", b"theirs", entry.revision))
        return bool(after)

    hearing = deaf_until(link, landed_and_written_over)
    revision = await write_at(writer, "k", b"mine", base)
    await hearing

    assert base < revision < after[0]
    assert [e.value for e in await history(kv, "k")] == [b"before", b"mine", b"theirs"]


async def test_a_put_whose_answer_was_lost_lands_once(buckets):
    """A write over whatever the key holds, asked again under one message id: the stream
    stores it once. Before, nats-py's `put` raised, and a change recorded before it was
    then recorded failed, and stood."""
    writer, kv, link = buckets
    base = await put(kv, "k", b"before")

    async def landed() -> bool:
        return (await kv.get("k")).revision > base

    hearing = deaf_until(link, landed)
    revision = await put(writer, "k", b"mine")
    await hearing

    assert (await kv.get("k")).revision == revision
    assert [e.value for e in await history(kv, "k")] == [b"before", b"mine"]


async def test_a_put_landed_and_written_over_since_is_not_written_again(buckets):
    writer, kv, link = buckets
    after: list[int] = []

    async def landed_and_written_over() -> bool:
        found = await current(kv, "k")
        if found and not after:
            after.append(await put(kv, "k", b"theirs"))
        return bool(after)

    hearing = deaf_until(link, landed_and_written_over)
    revision = await put(writer, "k", b"mine")
    await hearing

    assert revision < after[0]
    assert (await kv.get("k")).value == b"theirs"
    assert [e.value for e in await history(kv, "k")] == [b"mine", b"theirs"]


async def test_a_delete_and_a_removal_whose_answers_were_lost_each_land_once(buckets):
    writer, kv, link = buckets
    await put(kv, "k", b"before")

    async def deleted() -> bool:
        return not await current(kv, "k")

    hearing = deaf_until(link, deleted)
    await delete(writer, "k")
    await hearing
    assert [e.operation for e in await history(kv, "k")] == [None, "DEL"]

    await put(kv, "k", b"again")
    hearing = deaf_until(link, deleted)
    await remove(writer, "k", keep=timedelta(hours=1))
    await hearing
    assert [e.operation for e in await history(kv, "k")] == ["PURGE"]


async def test_one_another_writer_got_to_first_is_a_conflict(buckets):
    writer, kv, link = buckets
    base = await write_at(kv, "k", b"before", 0)
    theirs = await write_at(kv, "k", b"theirs", base)
    refused = asyncio.Event()

    async def refused_unheard() -> bool:
        return refused.is_set()

    hearing = deaf_until(link, refused_unheard)
    mine = asyncio.create_task(write_at(writer, "k", b"mine", base))
    # The server refuses it at once; the refusal waits in the Link past the writer's wait.
    refused.set()
    with pytest.raises(Conflict):
        await mine
    await hearing

    entry = await kv.get("k")
    assert (entry.value, entry.revision) == (b"theirs", theirs)


async def test_a_create_under_a_filter_and_a_delete_are_each_the_write_that_landed(buckets):
    writer, kv, link = buckets

    async def created() -> bool:
        return bool(await current(kv, "acme.org.a"))

    hearing = deaf_until(link, created)
    revision = await write_under(writer, "acme.org.a", b"mine", "acme.org.*", 0)
    await hearing
    assert (await kv.get("acme.org.a")).revision == revision

    async def deleted() -> bool:
        return (await history(kv, "acme.org.a"))[-1].operation == "DEL"

    hearing = deaf_until(link, deleted)
    await delete_at(writer, "acme.org.a", revision)
    await hearing
    assert [e.operation for e in await history(kv, "acme.org.a")] == [None, "DEL"]


@pytest.mark.parametrize("alone", [False, True])
async def test_a_create_writes_over_a_deleted_entry(buckets, alone):
    _, kv, _ = buckets
    first = await write_at(kv, "k", b"first", 0)
    await kv.delete("k")

    again = await write_at(kv, "k", b"again", 0, alone=alone)

    assert again > first
    assert (await kv.get("k")).value == b"again"
    with pytest.raises(Conflict):
        await write_at(kv, "k", b"third", 0, alone=alone)


async def test_one_written_over_where_one_revision_is_kept_is_a_conflict_asked_of_its_own_key(
    stack, connect
):
    """In a bucket that keeps one revision a key (the replies), a write written over is
    gone: what is there decides. A service may read only its own keys there, by the direct
    get that names the key, so the read of the first write past the place (which names
    none) was a permission violation, and a TimeoutError 5 s on."""
    key = f"echo.unanswered-{uuid.uuid4().hex[:8]}"
    password = stack.passwords["echo"]
    async with (
        across_a_link(stack.nats_url, "echo", password) as (near, link),
        connect("echo") as far,
    ):
        await Replies.open(far.jetstream(), "echo", replicas=1)
        writer = await near.jetstream(timeout=WAIT_S).key_value(REPLIES_BUCKET)
        kv = await far.jetstream().key_value(REPLIES_BUCKET)
        base = await write_at(kv, key, b"before", 0)
        after: list[int] = []

        async def landed_and_written_over() -> bool:
            entry = await kv.get(key)
            if entry.revision > base and not after:
                after.append(await write_at(kv, key, b"theirs", entry.revision))
            return bool(after)

        hearing = deaf_until(link, landed_and_written_over)
        with pytest.raises(Conflict):
            await write_at(writer, key, b"mine", base)
        await hearing
        assert (await kv.get(key)).value == b"theirs"
