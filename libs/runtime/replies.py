"""A keyed request's answer, kept before it is sent, so the same request run again (its
answer lost with a gateway or a NATS node that died) is answered as it was, never run twice.

    replies   <service>.<request key>   Kept; 25 h

The key is the gateway's `Tether-Request-Key`, already scoped to the caller; each service's
credential reaches only its own `<service>.` keys.

A request is claimed here before it runs (a create-only write), so two copies of it at two
replicas at once (an event and a timer carrying out one change, an event delivered again
while its first delivery still runs) run it once: the second waits for the first's answer.
A claim lasts `lease` seconds and is renewed while its request runs, so a replica that dies
holding one delays the request's retries no longer than a lease; the next copy then takes
it over. Claims, renewals and answers are `write_at`'s compare-and-sets, which know one
whose answer was lost (the replica's node stalled) as the write that landed: a claim so
made runs its request, and a renewal so made is not taken for another's take-over (which
would leave the answer unkept, and the request to run again). What is left is a replica
that dies between its change and keeping the answer, or one cut off from the bucket for a
lease while it runs: the request runs again, so its handler makes its change once under
the key. A subject whose handler does so in the same write (`Subject.keyed_itself`) keeps
nothing here.
"""

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.problem import PROBLEM_HEADER, KeyReused, Problem, Refused, Unavailable
from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime import logs
from libs.runtime.bus import AWAY
from libs.runtime.kv import Conflict, delete_at, open_bucket, write_at

__all__ = ["Answer", "Replies", "digest", "of_caller"]

_log = logging.getLogger(__name__)
# A day, as the gateway keeps a key's answer, and an hour more: a retry that comes once a
# killed gateway's key has left its time in flight still finds the answer here.
_KEPT_S = 25 * 3600
# A claim is renewed a third of this apart while its request runs: long enough to ride out
# a slow round trip, short enough that a replica killed holding one keeps its request
# waiting no longer than a failover does.
_LEASE_S = 6.0
# How long a copy waits for the answer of one running elsewhere before it is told to ask
# again: under the 10 s its caller waits.
_WAIT_S = 5.0


def digest(subject: str, request: bytes) -> bytes:
    """What tells the request a key was first sent with from another sent with it."""
    return hashlib.sha256(b"\n".join((subject.encode(), request))).digest()[:16]


def of_caller(caller: str, key: str) -> str:
    """The key a by-caller subject keeps `caller`'s answer under: each caller's keys are its
    own, so two services' keys never meet, and neither can forget the other's."""
    return f"{caller}.{key}"


class Answer(msgspec.Struct, array_like=True, frozen=True):
    """A reply as sent: its body and, for a problem, its status; `outcome` names it in
    the service's metrics (`ok` or the problem's rule)."""

    body: bytes
    status: int = 0
    outcome: str = "ok"

    @classmethod
    def of(cls, problem: Problem) -> "Answer":
        return cls(codec.encode(problem), problem.status, problem.rule)

    @property
    def headers(self) -> dict[str, str] | None:
        return {PROBLEM_HEADER: str(self.status)} if self.status else None


class Kept(msgspec.Struct, array_like=True, frozen=True):
    request: bytes  # its digest, to tell a key used again
    answer: Answer | None = None  # None while a replica runs it
    until: float = 0.0  # when a claim lapses (epoch seconds)


_kept = msgspec.msgpack.Decoder(Kept)


class Replies:
    def __init__(
        self, kv: KeyValue, service: str, *, lease: float = _LEASE_S, wait: float = _WAIT_S
    ) -> None:
        self._kv, self._service = kv, service
        self._lease, self._wait = lease, wait

    @classmethod
    async def open(cls, js: JetStreamContext, service: str, *, replicas: int) -> "Replies":
        config = KeyValueConfig(bucket=REPLIES_BUCKET, history=1, ttl=_KEPT_S, replicas=replicas)
        return cls(await open_bucket(js, config), service)

    async def once(
        self, key: str, request: bytes, answer: Callable[[], Awaitable[Answer]]
    ) -> Answer:
        """The answer kept under `key` for the same `request` (its `digest`), or
        `answer()`'s, run under a claim and kept unless it is a transient failure (5xx),
        which a retry should meet by running again."""
        name = f"{self._service}.{key}"
        found = await self._claimed(name, request)
        if isinstance(found, Answer):
            return found
        held, done = [found], asyncio.Event()
        renewing = asyncio.create_task(self._renewed(name, request, held, done))
        try:
            made = await answer()
        finally:
            done.set()
            await renewing
        try:
            if made.status >= 500:
                await delete_at(self._kv, name, held[0])
            else:
                await write_at(self._kv, name, msgspec.msgpack.encode(Kept(request, made)), held[0])
        except AWAY as exc:  # the change is made: its answer goes out all the same
            _log.warning("answer not kept", extra={"key": key, "error": logs.error_text(exc)})
        except Exception:
            _log.warning("answer not kept", extra={"key": key}, exc_info=True)
        return made

    async def _renewed(
        self, name: str, request: bytes, held: list[int], done: asyncio.Event
    ) -> None:
        """The claim at revision `held[0]` renewed a third of a lease apart until `done`,
        `held[0]` following it. A renewal that fails is tried at the next; one that finds
        the claim taken over (this replica was cut off for a lease) ends the renewals."""
        while True:
            try:
                await asyncio.wait_for(done.wait(), self._lease / 3)
                return
            except TimeoutError:
                pass
            claim = msgspec.msgpack.encode(Kept(request, until=time.time() + self._lease))
            try:
                held[0] = await write_at(self._kv, name, claim, held[0])
            except Conflict:
                _log.warning("claim taken over while it ran", extra={"key": name})
                return
            except AWAY as exc:  # the bus away: tried again at the next
                error = logs.error_text(exc)
                _log.warning("claim not renewed", extra={"key": name, "error": error})
            except Exception:
                _log.warning("claim not renewed", extra={"key": name}, exc_info=True)

    async def _claimed(self, name: str, request: bytes) -> int | Answer:
        """The revision of this replica's claim on `name`, or the answer to give instead:
        the one kept, a key used again, or, when another replica's claim outlasts the wait,
        a transient failure to ask again on."""
        deadline, pause = time.monotonic() + self._wait, 0.01
        while True:
            claim = msgspec.msgpack.encode(Kept(request, until=time.time() + self._lease))
            try:
                return await write_at(self._kv, name, claim, 0)
            except Conflict:
                pass
            except Unavailable:
                # Lost, and the claim that won was not found where `write_at` looked whether
                # it was deleted: a node behind the stream's leader answered. It is there next.
                pass
            try:
                entry = await self._kv.get(name)
            except KeyNotFoundError:
                pass  # let go meanwhile (a 5xx): claimed on the next round
            else:
                kept = _kept.decode(entry.value or b"")
                if kept.request != request:
                    return Answer.of(KeyReused().problem)
                if kept.answer is not None:
                    return msgspec.structs.replace(kept.answer, outcome="replayed")
                if kept.until <= time.time():  # its replica died, or ran past its lease
                    with contextlib.suppress(Conflict):
                        return await write_at(self._kv, name, claim, entry.revision)
            if time.monotonic() >= deadline:
                busy = f"request {name} is being answered by another replica; ask again"
                return Answer.of(Refused("request-in-flight", 503, busy).problem)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.2)

    async def forget(self, key: str) -> None:
        """The answer kept under `key` let go: the same request sent again runs again."""
        await self._kv.delete(f"{self._service}.{key}")
