"""A KV bucket's entries: what it holds now under a key filter, and the one way to change
an entry that must not race (a compare-and-set, retried a bounded number of times; a
stream's compare-and-set is retried by the same rule)."""

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any, TypeVar

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, RawStreamMsg
from nats.js.errors import (
    APIError,
    BadRequestError,
    BucketNotFoundError,
    NotFoundError,
)
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.problem import Refused, Unavailable
from libs.runtime.bus import AWAY
from libs.runtime.by_consumer import last_entries
from libs.runtime.direct import DirectGetUnavailable, TooManyResults, batch_get, last_get
from libs.runtime.locks import KeyedLocks

__all__ = [
    "GONE",
    "Conflict",
    "Read",
    "Record",
    "catching_up",
    "caught_up",
    "current",
    "current_and_newest",
    "delete",
    "delete_at",
    "is_filter",
    "open_bucket",
    "put",
    "remove",
    "retried",
    "settle",
    "swap",
    "write_at",
    "write_under",
]

T = TypeVar("T")
R = TypeVar("R")
Record = Callable[[Any, Any], AbstractAsyncContextManager[object]]
# (kv, *keys) -> the entries found; a key may be a filter (`current`, and
# `libs.runtime.leader.latest`, which has every acknowledged write in what it reads).
Read = Callable[..., Awaitable[list[KeyValue.Entry]]]
_writers = KeyedLocks()
# A replica behind the leader catches up within milliseconds; a second is past that.
_CATCH_UP_TRIES, _CATCH_UP_S = 50, 0.02


class Conflict(Exception):
    """The entry exists (for a create), or changed since it was read."""


async def write_at(
    kv: KeyValue,
    key: str,
    value: bytes,
    revision: int,
    *,
    keep: timedelta | None = None,
    alone: bool = False,
) -> int:
    """Compare-and-set: create the entry when `revision` is 0, else update it at
    `revision`; its new revision, or Conflict if another writer got there first.

    With `alone`, it becomes the key's only message: what came before is rolled up, so no
    earlier value can be read again, from the bucket's history either (what a person asked
    to be forgotten). With `keep`, the entry is settled: alone, and the server removes it
    once `keep` has passed. What is only read back for a while, kept forever, would be read
    whole with what is live under the same filter.

    A compare-and-set here (and in `write_under`, `delete_at`) whose answer never came
    (nats-py's wait ran out: a node stalled, a link lost) is asked again: it is landed, with
    the revision it landed at, or lost to another writer, a Conflict; never a change made
    and taken for one that was not. Asked three times unanswered, it raises nats-py's
    TimeoutError, and may have landed."""
    headers = {"Nats-Expected-Last-Subject-Sequence": str(revision)}
    if keep is not None or alone:
        headers["Nats-Rollup"] = "sub"
    try:
        return await _published(kv, key, value, headers, keep)
    except Conflict:
        if revision != 0:
            raise
    # An entry deleted is still there, as its marker: a create writes over that (as
    # nats-py's `create` does).
    found = await _last_message(kv, key)
    if found is None:
        # Just after a leader moved, a replica not yet caught up answers this read: the
        # entry is there, but not there yet. What it holds is known only once the replicas
        # agree again.
        raise catching_up(f"{key} is being copied to a new leader")
    if (found.headers or {}).get("KV-Operation") not in GONE:
        raise Conflict(key)
    return await write_at(kv, key, value, found.seq, keep=keep, alone=alone)


async def write_under(kv: KeyValue, key: str, value: bytes, keys: str, newest: int) -> int:
    """Compare-and-set over every key under the filter `keys` (`acme.org.*.*`): `key` is
    written only if nothing under `keys` was written or deleted since the revision
    `newest` (0: nothing ever was); its new revision, or Conflict. For a bound on what
    several keys hold together, decided on them as read at `newest` or later."""
    headers = {
        "Nats-Expected-Last-Subject-Sequence": str(newest),
        "Nats-Expected-Last-Subject-Sequence-Subject": f"{kv._pre}{keys}",
    }
    return await _published(kv, key, value, headers, keep=None)


async def put(kv: KeyValue, key: str, value: bytes, *, keep: timedelta | None = None) -> int:
    """Write `value` over whatever `key` holds: its revision. One whose answer never came
    is asked again, and lands once (see `_published`): nats-py's `put` raised, and a change
    recorded before such a write was then recorded `.failed` too, and stood. With `keep`,
    the server removes it once `keep` has passed, unless written again since."""
    return await _published(kv, key, value, {}, keep)


async def delete(kv: KeyValue, key: str) -> None:
    """Delete the entry, whatever it holds, asked again as `put` is."""
    await _published(kv, key, b"", {"KV-Operation": "DEL"}, None)


async def settle(kv: KeyValue, key: str, *, keep: timedelta, read: Read | None = None) -> None:
    """What `key` holds (read by `read`, `current` unless given), kept from now for `keep`
    only, as `write_at` keeps it: for an entry written once that names something which has
    just settled. One changed since it was read is left as it is."""
    found = await (read or current)(kv, key)
    if found:
        with contextlib.suppress(Conflict):
            await write_at(kv, key, found[0].value or b"", found[0].revision, keep=keep)


async def delete_at(kv: KeyValue, key: str, revision: int) -> None:
    """Delete the entry if it is still at `revision`; Conflict if it changed since."""
    headers = {"KV-Operation": "DEL", "Nats-Expected-Last-Subject-Sequence": str(revision)}
    await _published(kv, key, b"", headers, None)


async def remove(kv: KeyValue, key: str, *, keep: timedelta | None) -> None:
    """Remove the entry and what came before it. Its marker, which tells a reader that the
    entry is gone (a replica behind the leader holds it still), is removed in turn once
    `keep` has passed; a deletion's marker would stay, and be read, forever. With no
    `keep` it stays: where a compare-and-set over a filter (`write_under`) must see the
    removal as the newest write there."""
    await _published(kv, key, b"", {"KV-Operation": "PURGE", "Nats-Rollup": "sub"}, keep)


# The stream's answer to a write whose expected last sequence was not the last.
_WRONG_LAST_SEQUENCE = (10071, 10164)
# A compare-and-set's own id, to tell it among what landed after the place it was asked at.
_WRITE_ID = "Tether-Write"
# The longest TTL the server takes: its nanoseconds in an int64 (some 292 years); one asked
# to keep longer (a question closing in the year 3093) is kept that long, for good.
_MOST_TTL_S = (2**63 - 1) // 10**9
# A write whose answer never came is asked this often in all (5 s each, nats-py's
# wait): a node stalled for seconds answers the last.
_ASKS = 3


async def _published(
    kv: KeyValue, key: str, value: bytes, headers: dict[str, str], keep: timedelta | None
) -> int:
    """Every write here: a message with headers of its own, which nats-py's KeyValue has
    no form for (a compare-and-set over a filter; a time to live, which the bucket's stream
    allows one per message, with `keep`; an id to be stored once under)."""
    if keep is not None:
        headers["Nats-TTL"] = f"{min(max(1, int(keep.total_seconds())), _MOST_TTL_S)}s"
    subject = f"{kv._pre}{key}"
    # A write whose answer never came may have landed: it is asked again, and lands once at
    # most. A compare-and-set is the same write at the same place; one that meets a write
    # after that place looks at the first such write, its own if it carries its id. Any
    # other write carries a message id, which the bucket's stream stores once within its
    # duplicate window (two minutes).
    if "Nats-Expected-Last-Subject-Sequence" in headers:
        headers[_WRITE_ID] = uuid.uuid4().hex
    else:
        headers["Nats-Msg-Id"] = uuid.uuid4().hex
    asks = 0
    while True:
        asks += 1
        try:
            return (await kv._js.publish(subject, value, headers=headers)).seq
        except nats.errors.TimeoutError:
            if asks == _ASKS:
                raise
        except APIError as exc:
            if exc.err_code not in _WRONG_LAST_SEQUENCE:
                raise
            if asks > 1 and (landed := await _landed(kv, key, headers)) is not None:
                return landed
            raise Conflict(key) from exc


async def _landed(kv: KeyValue, key: str, headers: dict[str, str]) -> int | None:
    """The revision of this write (`headers` name it) if it landed at the place it was
    asked at; None if another write did (or if one that rolled the key up since has removed
    it: taken as lost, a retry decides again). The stream's leader said a write is there,
    so a replica that holds none past that place is behind, and asked again.

    The key's last write is read first (`_last_message`). Only if that is another's, or
    the place is a filter's, is the first write after the place read, which may be this
    one, written over since; in a bucket that keeps one revision a key (the kept answers)
    one written over is gone, and the last decides."""
    after = int(headers["Nats-Expected-Last-Subject-Sequence"])
    under = headers.get("Nats-Expected-Last-Subject-Sequence-Subject")
    js, subject = kv._js, under or f"{kv._pre}{key}"

    async def last() -> tuple[RawStreamMsg | None, bool]:
        found = await _last_message(kv, key)
        return found, found is not None and found.seq > after

    async def first() -> tuple[Msg | None, bool]:
        request = {"seq": after + 1, "next_by_subj": subject, "batch": 1}
        found, _ = await batch_get(js._nc, kv._stream, request)
        return (found[0], True) if found else (None, False)

    what = f"the write after {subject} at {after}"
    if under is None:
        newest = await caught_up(last, what)
        if newest.headers and newest.headers.get(_WRITE_ID) == headers[_WRITE_ID]:
            return newest.seq
        if (await js.stream_info(kv._stream)).config.max_msgs_per_subject == 1:
            return None
    found = await caught_up(first, what)
    if found.headers.get(_WRITE_ID) != headers[_WRITE_ID]:
        return None
    return int(found.headers["Nats-Sequence"])


async def _last_message(kv: KeyValue, key: str) -> RawStreamMsg | None:
    """The key's last message, a deletion's marker included, from whichever replica
    answers; None if it holds none. Asked in the form of a direct get that names the key,
    which every writer of a key may ask (a service reaches only its own keys in the bucket
    of kept answers, and not by the form that names none)."""
    try:
        return await kv._js.get_msg(kv._stream, subject=f"{kv._pre}{key}", direct=True)
    except NotFoundError:
        return None


def catching_up(what: str) -> Unavailable:
    """A replica not yet caught up answered: a transient failure (503), to ask again."""
    return Unavailable(Refused("catching-up", 503, f"{what}; retry").problem)


async def caught_up(read: Callable[[], Awaitable[tuple[T, bool]]], what: str) -> T:
    """What `read()` answers (with whether the replica that answered holds what the leader
    held before it), asked again until one that does answers; a 503 `catching-up` if none
    does for a second."""
    for _ in range(_CATCH_UP_TRIES):
        answer, holds = await read()
        if holds:
            return answer
        await asyncio.sleep(_CATCH_UP_S)
    raise catching_up(f"{what} is still being copied")


async def swap(
    kv: KeyValue,
    key: str,
    change: Callable[[T], T],
    *,
    decode: Callable[[bytes], T],
    default: T,
    write: Callable[[T, int], Awaitable[object]] | None = None,
    kept: Callable[[T], timedelta | None] | None = None,
    record: Record | None = None,
    read: Read | None = None,
    attempts: int = 16,
) -> tuple[T, T]:
    """Read the entry (`default` if none), apply the pure `change`, write the result at the
    revision read, and retry on a conflict: `(before, after)`. A change that changes
    nothing writes and records nothing; one that refuses raises, and nothing is written.

    `write(after, revision)` replaces the plain write (JSON at the revision) for an entry
    stored otherwise; it raises Conflict when it loses. `kept(after)` is how long the
    plain write keeps the entry (`write_at`'s `keep`): None, for good; a time, once what
    it holds has settled.

    `read` is how the entry is read (`current` unless given). A write at a revision that
    is not the newest loses, so a stale read costs only a retry; but a change that changes
    nothing, or refuses, is decided on what was read, so a store that must not decide on a
    replica behind the leader passes its exact read.

    `record(before, after)` is an async context manager around the write (the audit
    trail's `change`): the record is made before the write, and a write that loses is
    marked failed there. Writers of one key in this process take turns, so only a writer in
    another replica can make one lose; a lost race is then decided again, and recorded
    again only if it still changes something."""
    put = write or (
        lambda value, revision: write_at(
            kv, key, codec.encode(value), revision, keep=kept(value) if kept else None
        )
    )

    async def attempt() -> tuple[T, T]:
        found = await (read or current)(kv, key)
        if found:
            before, revision = decode(found[0].value or b""), found[0].revision
        else:
            before, revision = default, 0
        after = change(before)
        if after == before:
            return before, after
        if record is None:
            await put(after, revision)
        else:
            async with record(before, after):
                await put(after, revision)
        return before, after

    async with _writers.hold(f"{kv._name}.{key}"):
        return await retried(attempt, key, attempts=attempts)


async def retried(attempt: Callable[[], Awaitable[R]], key: str, *, attempts: int = 16) -> R:
    """`attempt()`, again while it loses a compare-and-set (raises Conflict), at most
    `attempts` times; then a transient failure, for the caller to try later."""
    for _ in range(attempts):
        try:
            return await attempt()
        except Conflict:
            continue
    raise Unavailable(Refused("contended", 503, f"{key} kept changing; retry").problem)


_LIMIT = 1_024  # the most subjects one `multi_last` answers; past it, a 413 and none
# The KV-Operation header of an entry deleted or purged: no value, whatever it held.
GONE = ("DEL", "PURGE")


async def current(kv: KeyValue, *keys: str) -> list[KeyValue.Entry]:
    """The entries under each of `keys` (keys, or subject wildcards such as `acme.ada.*`)
    as stored now, by whichever replica answers."""
    entries, _ = await current_and_newest(kv, *keys)
    return entries


async def current_and_newest(kv: KeyValue, *keys: str) -> tuple[list[KeyValue.Entry], int]:
    """`current`, and the newest revision the answering replica holds under `keys`, a
    deletion's included: how far it has applied the bucket there (0 if it holds nothing).

    One batched direct get of the last message of each matching key (one key alone, the
    direct get's one-key form): no consumer is made, so many readers at once cost the
    server nothing lasting, and several keys cost one round trip. A bucket without direct
    gets, or more keys than one batch answers (the server answers none past 1,024), is read
    by a consumer on each filter instead (nats-py's own `keys()` watches the whole bucket
    and filters by substring).
    """
    # nats-py keeps the bucket's stream, key prefix and connection on the KeyValue.
    nc, stream, prefix = kv._js._nc, kv._stream, kv._pre
    try:
        if len(keys) == 1 and not is_filter(keys[0]):
            found, more = await last_get(nc, stream, f"{prefix}{keys[0]}"), 0
        else:
            found, more = await batch_get(
                nc, stream, {"multi_last": [f"{prefix}{k}" for k in keys], "batch": _LIMIT}
            )
    except (DirectGetUnavailable, TooManyResults):
        found, more = [], True
    if more:
        stored = [entry for k in keys for entry in await last_entries(kv, k)]
    else:
        stored = [
            KeyValue.Entry(
                bucket=kv._name,
                key=msg.headers["Nats-Subject"][len(prefix) :],
                value=msg.data,
                revision=int(msg.headers["Nats-Sequence"]),
                delta=None,
                created=None,
                operation=msg.headers.get("KV-Operation"),
            )
            for msg in found
        ]
    newest = max((entry.revision for entry in stored), default=0)
    return [entry for entry in stored if entry.operation not in GONE], newest


def is_filter(keys: str) -> bool:
    """Whether `keys` is a subject wildcard over keys (`acme.ada.*`) rather than a key."""
    return any(token in ("*", ">") for token in keys.split("."))


async def open_bucket(js: JetStreamContext, config: KeyValueConfig) -> KeyValue:
    """The bucket, made with `config` (and direct gets, which `current` reads by) if no
    replica has made it yet, once it has a leader. A cluster still electing answers some
    requests late or not yet: those are asked again for a while."""

    async def opened() -> KeyValue:
        try:
            return await js.key_value(config.bucket)
        except BucketNotFoundError:
            config.direct = True
            try:
                return await js.create_key_value(config)
            except BadRequestError:  # another made it first, with other settings: keep theirs
                return await js.key_value(config.bucket)

    kv = await _patiently(opened, f"bucket {config.bucket}")
    await led(js, f"KV_{config.bucket}")
    return kv


async def led(js: JetStreamContext, stream: str, *, within: float = 30.0) -> None:
    """Until `stream` has a leader. On a cluster a stream just made elects one first (and is
    not found for a moment), and a write before then finds no one to answer it."""

    async def leader() -> None:
        info = await js.stream_info(stream)
        if info.cluster is not None and not info.cluster.leader:
            raise TimeoutError(f"stream {stream} has no leader yet")

    await _patiently(leader, f"stream {stream}", within=within, also=(NotFoundError,))


async def _patiently(
    attempt: Callable[[], Awaitable[R]],
    what: str,
    *,
    within: float = 30.0,
    also: tuple[type[Exception], ...] = (),
) -> R:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            return await attempt()
        except (*AWAY, *also) as exc:
            if loop.time() > deadline:
                raise TimeoutError(f"{what}: not ready after {within:.0f} s") from exc
            await asyncio.sleep(0.1)
