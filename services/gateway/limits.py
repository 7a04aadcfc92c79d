"""Per-principal rate limits and Idempotency-Key replays, kept in Redis."""

import asyncio
import contextlib
import hashlib
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator

import msgspec
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from libs.contracts import codec
from libs.contracts.principal import Principal
from libs.contracts.problem import KeyReused, Refused

__all__ = [
    "IDEMPOTENCY_KEY",
    "WINDOW_S",
    "IdempotencyKeys",
    "Late",
    "Quota",
    "RateLimited",
    "RateLimiter",
    "StoreUnavailable",
    "Stored",
    "admit",
    "checked_key",
    "who",
]

_log = logging.getLogger(__name__)
# What an Idempotency-Key may be: printable ASCII, as a header carries it everywhere.
IDEMPOTENCY_KEY = re.compile(r"[ -~]{1,200}")
WINDOW_S = 60
# The most of an answer's body kept under its key. Redis holds every key a day, so it is
# sized by keys (deploy/k8s: some 800,000 of ~400 bytes): an answer of a MiB (a grant may
# be one) would hold the room of 2,500. A larger answer is asked of the service again, which
# keeps every keyed answer for 25 h (libs/runtime/replies) and replays it, not runs it.
_KEPT_MOST = 16 * 1024
_PROBLEM = "application/problem+json"
# A key in flight is held this long, and renewed a third of it apart while its gateway waits
# for the service: a gateway killed mid-request lets its keys go within it, and a retry then
# reaches the service, which runs a key once (libs/runtime/replies).
_LEASE_S = 6
# A retry told its key is in flight asks again this soon: the first's answer, or its lease
# let go, may come any moment.
_IN_PROGRESS_RETRY_AFTER_S = 1
# Renewed only while it holds what its holder wrote: never once settled, or marked late.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
# INCR and the first EXPIRE in one step, so a crash between them cannot leave a key forever.
_COUNT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n
"""


def who(p: Principal) -> str:
    """Whom a limit counts: an agent apart from its person."""
    return f"{p.org}:{p.sub}:{p.act or '-'}"


class StoreUnavailable(Refused):
    """Redis refused the connection, did not answer in time, or is full: a transient
    failure, so a 503 to ask again. A request that cannot be counted or keyed is not let
    through."""

    def __init__(self, why: str = "did not answer") -> None:
        super().__init__(
            "store-unavailable",
            503,
            f"the gateway's store of rate limits and Idempotency-Keys {why}; ask again",
        )


@contextlib.contextmanager
def _asking_store() -> Iterator[None]:
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError) as exc:
        _log.warning("the store did not answer", extra={"error": type(exc).__name__})
        raise StoreUnavailable() from exc
    except ResponseError as exc:
        # At its maxmemory, which it never evicts to reach (a key dropped early would run
        # a request twice), a write is refused OOM (inside a script, as the script's
        # error). Room comes back as keys expire, or when its operator gives it more: an
        # error for the operator to see, and a 503 for the client to ask again.
        if not isinstance(exc, OutOfMemoryError) and "OOM command not allowed" not in str(exc):
            raise
        _log.error("the store is full", extra={"error": str(exc)})
        raise StoreUnavailable("is full") from exc


class Quota(msgspec.Struct, frozen=True):
    """What a caller's rate leaves them: `limit` requests a minute, `used` of them in this
    window, which ends in `reset_s` seconds."""

    limit: int
    used: int
    reset_s: int

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


class RateLimited(Refused):
    """Over the principal's rate: 429, with the seconds until its window ends, when asking
    again is counted afresh (the answer's Retry-After)."""

    def __init__(self, quota: Quota) -> None:
        super().__init__(
            "rate-limited",
            429,
            f"more than {quota.limit} requests this minute; slow down",
            retry_after=quota.reset_s,
        )


def admit(quota: Quota | None) -> None:
    """Refused 429 once over the rate; no quota, no rate (`TETHER_RATE_LIMIT=0`)."""
    if quota is not None and quota.used > quota.limit:
        raise RateLimited(quota)


class RateLimiter:
    """A fixed one-minute window per principal (an agent counts apart from its person)."""

    def __init__(self, redis: Redis, per_minute: int) -> None:
        self._count = redis.register_script(_COUNT)
        self._limit = per_minute

    async def count(self, principal: Principal) -> Quota | None:
        """The principal's request counted in its window, and what that leaves them."""
        if self._limit <= 0:
            return None
        now = time.time()
        window = int(now) // WINDOW_S
        with _asking_store():
            n = await self._count(keys=[f"tether:rl:{who(principal)}:{window}"], args=[WINDOW_S])
        return Quota(self._limit, n, math.ceil((window + 1) * WINDOW_S - now))


class Late(Exception):
    """A keyed request whose reply did not come in time: `answer` (504) goes to the client
    now; `reply` is still awaited and settles the key when it comes."""

    def __init__(self, answer: "Stored", reply: "asyncio.Future[Stored]") -> None:
        super().__init__("the service has not answered yet")
        self.answer, self.reply = answer, reply


class Stored(msgspec.Struct, array_like=True):
    """What a key holds: its request's fingerprint and, once answered, the answer; an answer
    too large to keep here (`kept` false) is asked of its service again, which kept it.
    One in flight that was answered 504 (`late`) is asked of its service again too."""

    fingerprint: str
    status: int = 0
    body: bytes = b""
    content_type: str = ""
    kept: bool = True
    late: bool = False


def _in_flight(fingerprint: str) -> bytes:
    """What a key holds while its request runs."""
    return msgspec.msgpack.encode(Stored(fingerprint))


def checked_key(key: str) -> str:
    """`key`, if it may be an Idempotency-Key; refused otherwise, before anything runs."""
    if not IDEMPOTENCY_KEY.fullmatch(key):
        why = "Idempotency-Key: 1-200 printable ASCII characters"
        raise Refused("idempotency-key-invalid", 400, why)
    return key


class IdempotencyKeys:
    """The first POST with a key runs; a retry with the same key and request gets its answer."""

    def __init__(self, redis: Redis, ttl_s: int = 24 * 3600, lease_s: int = _LEASE_S) -> None:
        """`lease_s`: how long a key stays in flight unless the gateway that took it renews
        it, as it does while it waits for the service. Before, a key was held for both
        timeouts and 10 s (75 s by default): a gateway killed mid-request left each of its
        keys answering 409 that long."""
        self._redis = redis
        self._renew = redis.register_script(_RENEW)
        self._ttl, self._lease = ttl_s, lease_s
        self._settling: set[asyncio.Future[None]] = set()

    @staticmethod
    def fingerprint(method: str, path: str, body: bytes) -> str:
        return hashlib.sha256(b"\n".join((method.encode(), path.encode(), body))).hexdigest()

    async def claim(self, principal: Principal, key: str, fingerprint: str) -> Stored | None:
        """None: this request runs now. Otherwise the earlier answer to replay."""
        name = self._name(principal, checked_key(key))
        with _asking_store():
            if await self._redis.set(name, _in_flight(fingerprint), nx=True, ex=self._lease):
                return None
            raw = await self._redis.get(name)
        stored = msgspec.msgpack.decode(raw, type=Stored) if raw else None
        if stored is None:
            return await self.claim(principal, key, fingerprint)
        if stored.fingerprint != fingerprint:
            raise KeyReused()
        if stored.status == 0 and not stored.late:
            raise Refused(
                "idempotency-key-in-use",
                409,
                "a request with this key is in progress",
                retry_after=_IN_PROGRESS_RETRY_AFTER_S,
            )
        return stored

    async def once(
        self, principal: Principal, key: str, fingerprint: str, run: Callable[[], Awaitable[Stored]]
    ) -> tuple[Stored, bool]:
        """The answer to the request, and whether it is a replay of an earlier one."""
        earlier = await self.claim(principal, key, fingerprint)
        if earlier is not None and earlier.status and earlier.kept:
            return earlier, True
        holding = None if earlier is not None else self._held(principal, key, fingerprint)
        try:
            answer = await run()
        except Late as late:
            # The service may yet write: its late reply settles the key. A retry meanwhile
            # is asked of the service again, which runs a key once (it waits for the
            # first's answer, or answers as it did): told 409, it waited out a reply that
            # may never come (lost as its service's connection broke).
            await self._mark_late(principal, key, fingerprint)
            late.reply.add_done_callback(
                lambda reply: self._keep(self._settle_late(principal, key, fingerprint, reply))
            )
            return late.answer, False
        except Refused as exc:
            answer = Stored("", exc.problem.status, codec.encode(exc.problem), _PROBLEM)
        except BaseException:
            # Not forgotten, the key waits out its time in flight instead.
            with contextlib.suppress(StoreUnavailable), _asking_store():
                await self._redis.delete(self._name(principal, key))
            raise
        finally:
            if holding is not None:
                holding.cancel()
        answer = msgspec.structs.replace(answer, fingerprint=fingerprint)
        await self._settle_or_wait(principal, key, answer)
        return answer, earlier is not None

    def _held(self, principal: Principal, key: str, fingerprint: str) -> "asyncio.Task[None]":
        """The key kept in flight while its request runs here, its lease renewed."""
        name, pending = self._name(principal, key), _in_flight(fingerprint)

        async def renew() -> None:
            while True:
                await asyncio.sleep(self._lease / 3)
                with contextlib.suppress(StoreUnavailable), _asking_store():
                    await self._renew(keys=[name], args=[pending, self._lease])

        return asyncio.create_task(renew())

    async def settle(self, principal: Principal, key: str, answer: Stored) -> None:
        """Keep a final answer; forget the key after a server error, so a retry runs again."""
        name = self._name(principal, key)
        with _asking_store():
            if answer.status >= 500:
                await self._redis.delete(name)
                return
            if len(answer.body) > _KEPT_MOST:
                answer = Stored(answer.fingerprint, answer.status, kept=False)
            await self._redis.set(name, msgspec.msgpack.encode(answer), ex=self._ttl)

    async def _settle_or_wait(self, principal: Principal, key: str, answer: Stored) -> None:
        """Settle the key; if the store cannot keep the answer now, the request's answer is
        still given, and the key waits out its time in flight as a killed gateway's does:
        a retry is told to wait (409), then runs again to the service, which made it once."""
        try:
            await self.settle(principal, key, answer)
        except StoreUnavailable:
            _log.warning(
                "an answer could not be kept under its key", extra={"status": answer.status}
            )

    async def _mark_late(self, principal: Principal, key: str, fingerprint: str) -> None:
        """The key, still in flight, marked answered 504 (its lease kept, and no longer
        renewed). One the store cannot mark stays as it was: a retry is told 409 until it
        is settled or its lease ends."""
        late = msgspec.msgpack.encode(Stored(fingerprint, late=True))
        with contextlib.suppress(StoreUnavailable), _asking_store():
            await self._redis.set(self._name(principal, key), late, xx=True, keepttl=True)

    async def _settle_late(
        self, principal: Principal, key: str, fingerprint: str, reply: "asyncio.Future[Stored]"
    ) -> None:
        """The late reply is the key's answer. A reply that never came (lost as the NATS
        node it crossed died, say) leaves the outcome unknown: the key's time in flight runs
        out as a killed gateway's does, and a retry then runs again, made once by the
        service under its key."""
        try:
            answer = reply.result()
        except Refused as exc:
            if exc.problem.status == 504:
                return
            answer = Stored("", exc.problem.status, codec.encode(exc.problem), _PROBLEM)
        except BaseException:
            return
        answer = msgspec.structs.replace(answer, fingerprint=fingerprint)
        await self._settle_or_wait(principal, key, answer)

    def _keep(self, settling: Coroutine[None, None, None]) -> None:
        task = asyncio.ensure_future(settling)
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    def _name(self, principal: Principal, key: str) -> str:
        return f"tether:idem:{who(principal)}:{key}"
