"""`tether.audit.append.<caller>`: seal the record after the org's tail and store it.

Appends to one org are taken one at a time in a replica (a lock per org), so they never
race each other; the stream's expected-last-sequence check settles races between replicas.

A record that comes past its caller's wait (`Tether-Before`, as every call says) is not
stored, or, if the wait ran out as it was stored, is followed by `<action>.abandoned`;
either is answered 503, so its caller makes no change, and the trail names none as made.
So is one whose store failed with no word from the stream and that was stored after all
(the stream's leader alone, until its other nodes came back): it is found, and marked, once
the org's next record is stored. A change's record is stored under its change's id, and
asked again, `abandoned`, by a caller that never heard whether it was (its answer lost on
the way back): found, or stored then, it is marked the same way. The record that a change
failed (`failure_of`, never read from its action's name) names no change to be made: it is
stored however late, and once under its own id, so one asked again (its kept answer lost
with its replica) is found.

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
from libs.runtime import logs
from libs.runtime.kv import Conflict, retried
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
        # Records whose store failed with no word from the stream (a timeout: its leader's
        # other nodes away), each with the seq it was to follow: any may yet be stored.
        self._unsure: dict[str, list[tuple[int, audit.AuditRecord]]] = {}

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
        # A change's record is stored once under its id: asked again, it is found.
        once = None if req.change_id is None else f"change-{caller}-{req.org}-{req.change_id}"
        # A change's failure names no change to be made: as true however late it is stored,
        # and, as the audit's own marks are, asked again under its id, never looked for.
        failure = req.failure_of is not None
        async with self._locks.hold(req.org):
            # past it now if the org's appends before it were slow
            before = None if failure else request_before()
            if before is not None and self._clock() >= before:
                raise _late(req, before, "not stored")
            base, record = await retried(
                lambda: self._append(draft, msg_id=once, mark=failure), req.org
            )
            await self._settle_unsure(req.org)
            if req.abandoned:
                await self._abandon(base, record)
            elif before is not None and self._clock() >= before:
                # Stored as its caller stopped waiting: the change it names is not made.
                await self._abandon(base, record)
                raise _late(req, before, f"stored as record {record.n}, marked abandoned")
            return record

    async def _append(
        self, draft: audit.AuditRecord, *, msg_id: str | None = None, mark: bool = False
    ) -> tuple[int, audit.AuditRecord]:
        """Sealed after the tail this replica last wrote, and stored: the stream sequence
        it follows, and the record. One that loses to another replica leaves no tail here,
        so the next attempt reads it. One whose store failed with no word from the stream
        may yet be stored, and is looked for once the org's next record is. One stored
        before under `msg_id` is that record, as stored."""
        base, link = self._tails.pop(draft.org, None) or await self._store.tail(draft.org)
        record = seal(draft, after=link)
        try:
            seq, earlier = await self._store.append(record, after_seq=base, msg_id=msg_id)
        except Conflict:
            raise
        except Exception:
            if not mark:  # a mark is asked again under its id, and never looked for
                self._unsure.setdefault(draft.org, []).append((base, record))
            raise
        if earlier:  # the tail is read again
            return seq - 1, await self._store.at(seq)
        self._tails[draft.org] = (seq, Link(record.n, record.hash))
        return base, record

    async def _abandon(self, base: int, record: audit.AuditRecord) -> None:
        """`record`, stored after `base`, followed by `<action>.abandoned`: its caller was
        answered 503, or never heard back, and made no change. Stored once for each record
        (its message id), and, if it cannot be now, once the org's next record is."""
        mark = msgspec.structs.replace(
            record, action=f"{record.action}.abandoned", data={"record": record.n}
        )
        marked = f"abandoned-{record.org}-{record.n}"
        try:
            await retried(lambda: self._append(mark, msg_id=marked, mark=True), record.org)
        except Exception:
            self._unsure.setdefault(record.org, []).append((base, record))
            raise

    async def _settle_unsure(self, org: str) -> None:
        """Each record of `org` whose store failed with no word, looked for where it was to
        go, now that a record of the org is stored after it: there, it was stored after its
        caller was told 503, and is marked abandoned; another record there means it never
        was. Before, it could be stored once the stream's nodes came back, and the trail
        named as made a change never made. One that cannot be looked for or marked now (the
        stream away again) is kept for the next: this append is stored, and answered so."""
        for base, record in self._unsure.pop(org, []):
            where = {"org": org, "record": record.n, "action": record.action}
            try:
                there = await self._store.hash_after(org, base)
            except Exception as exc:
                self._unsure.setdefault(org, []).append((base, record))
                _log.warning(
                    "a record not yet looked for", extra={**where, "error": logs.error_text(exc)}
                )
                continue
            if there != record.hash:
                continue  # never stored
            try:
                await self._abandon(base, record)  # kept for the next, if it fails
            except Exception as exc:
                _log.warning(
                    "a record not yet marked", extra={**where, "error": logs.error_text(exc)}
                )
                continue
            _log.warning("a record stored after its store failed, marked abandoned", extra=where)

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
