"""`tether.audit.append.<caller>`: seal the record after the org's tail and store it.

Appends to one org are taken one at a time in a replica (a lock per org), so they never
race each other; the stream's expected-last-sequence check settles races between replicas.

A record whose caller says when it stops waiting (`Tether-Before`, as a record that goes
before a change does) and that comes past it is not stored, or, if the wait ran out as it
was stored, is followed by `<action>.abandoned`; either is answered 503, so its caller
makes no change, and the trail names none as made.

A keyed append is answered once (the runtime keeps its answer, under the calling service's
own keys). The record that a keyed change failed names that key (`forgets`), and its
caller's kept answer is let go before the record is written: the change asked again is
another try, and is recorded again, so the trail never reads as failed what a retry then
made.
"""

import logging
from collections.abc import Callable, Mapping
from datetime import datetime

import msgspec

from libs.audit.chain import Link, seal
from libs.contracts import audit
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused, Unavailable
from libs.contracts.registry import Subject
from libs.runtime.kv import retried
from libs.runtime.locks import KeyedLocks
from libs.runtime.replies import Replies, of_caller
from libs.runtime.service import Handler, request_before
from services.audit.store import ChainStore

__all__ = ["Handlers"]

Clock = Callable[[], datetime]
_log = logging.getLogger(__name__)


class Handlers:
    def __init__(self, store: ChainStore, replies: Replies, clock: Clock) -> None:
        self._store, self._replies, self._clock = store, replies, clock
        self._locks = KeyedLocks()
        # Each org's tail as this replica last wrote it; a stale one loses the append's
        # compare-and-set and is read again.
        self._tails: dict[str, tuple[int, Link]] = {}

    async def append(self, req: audit.Append, p: Principal) -> audit.AuditRecord:
        caller = p.sub.removeprefix("service:")  # the bus proved who asks
        draft = audit.AuditRecord(
            org=req.org,
            n=0,
            at=req.at or self._clock(),
            service=caller,
            actor=req.actor,
            action=req.action,
            target=req.target,
            data=req.data,
        )
        if req.forgets is not None:
            await self._replies.forget(of_caller(caller, req.forgets))
        async with self._locks.hold(req.org):
            before = request_before()  # past it now if the org's appends before it were slow
            if before is not None and self._clock() >= before:
                raise _late(req, before, "not stored")
            record = await retried(lambda: self._append(draft), req.org)
            if before is not None and self._clock() >= before:
                # Stored as its caller stopped waiting: the change it names is not made.
                abandoned = msgspec.structs.replace(
                    draft, action=f"{req.action}.abandoned", data={"record": record.n}
                )
                await retried(lambda: self._append(abandoned), req.org)
                raise _late(req, before, f"stored as record {record.n}, marked abandoned")
            return record

    async def _append(self, draft: audit.AuditRecord) -> audit.AuditRecord:
        """Sealed after the tail this replica last wrote; one that loses to another replica
        leaves no tail here, so the next attempt reads it."""
        seq, link = self._tails.pop(draft.org, None) or await self._store.tail(draft.org)
        record = seal(draft, after=link)
        seq = await self._store.append(record, after_seq=seq)
        self._tails[draft.org] = (seq, Link(record.n, record.hash))
        return record

    def table(self) -> Mapping[Subject, Handler]:
        return {audit.APPEND: self.append}


def _late(req: audit.Append, before: datetime, what: str) -> Unavailable:
    """A record its caller stopped waiting for (the audit was stalled, or its stream slow):
    told 503, so the change it would go before is not made."""
    detail = (
        f"{req.action} for {req.org} came past its caller's wait ({before.isoformat()}): {what}"
    )
    # Said, since every one of them means a clock apart from the caller's, if not a stall.
    _log.warning("a record came past its caller's wait", extra={"detail": detail})
    return Unavailable(Refused("audit-late", 503, detail).problem)
