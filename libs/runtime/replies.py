"""A keyed request's answer, kept before it is sent, so the same request run again (its
answer lost with a gateway or a NATS node that died) is answered as it was, never run twice.

    replies   <service>.<request key>   Kept; 25 h

The key is the gateway's `Tether-Request-Key`, already scoped to the caller; each service's
credential reaches only its own `<service>.` keys. What is left is a replica that dies
between its change and keeping the answer. A subject whose handler makes its change once
under the key itself, in the same write (`Subject.keyed_itself`), keeps nothing here.
"""

import hashlib
import logging
from collections.abc import Awaitable, Callable

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.problem import PROBLEM_HEADER, KeyReused, Problem
from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime.kv import open_bucket

__all__ = ["Answer", "Replies", "digest"]

_log = logging.getLogger(__name__)
# A day, as the gateway keeps a key's answer, and an hour more: a retry that comes once a
# killed gateway's key has left its time in flight still finds the answer here.
_KEPT_S = 25 * 3600


def digest(subject: str, request: bytes) -> bytes:
    """What tells the request a key was first sent with from another sent with it."""
    return hashlib.sha256(b"\n".join((subject.encode(), request))).digest()[:16]


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
    answer: Answer


_kept = msgspec.msgpack.Decoder(Kept)


class Replies:
    def __init__(self, kv: KeyValue, service: str) -> None:
        self._kv, self._service = kv, service

    @classmethod
    async def open(cls, js: JetStreamContext, service: str, *, replicas: int) -> "Replies":
        config = KeyValueConfig(bucket=REPLIES_BUCKET, history=1, ttl=_KEPT_S, replicas=replicas)
        return cls(await open_bucket(js, config), service)

    async def once(
        self, key: str, request: bytes, answer: Callable[[], Awaitable[Answer]]
    ) -> Answer:
        """The answer kept under `key` for the same `request` (its `digest`), or
        `answer()`'s, kept unless it is a transient failure (5xx), which a retry should meet
        by running again."""
        name = f"{self._service}.{key}"
        try:
            kept = _kept.decode((await self._kv.get(name)).value or b"")
        except KeyNotFoundError:
            kept = None
        if kept is not None:
            if kept.request != request:
                return Answer.of(KeyReused().problem)
            return msgspec.structs.replace(kept.answer, outcome="replayed")
        made = await answer()
        if made.status < 500:
            try:
                await self._kv.put(name, msgspec.msgpack.encode(Kept(request, made)))
            except Exception:  # the change is made: its answer goes out all the same
                _log.warning("answer not kept", extra={"key": key}, exc_info=True)
        return made

    async def forget(self, key: str) -> None:
        """The answer kept under `key` let go: the same request sent again runs again."""
        await self._kv.delete(f"{self._service}.{key}")
