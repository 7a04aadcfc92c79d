"""`tether.audit.append.<caller>`: seal the record after the org's tail and store it.

Appends to one org are taken one at a time in a replica (a lock per org), so they never
race each other; the stream's expected-last-sequence check settles races between replicas.
"""

from collections.abc import Callable, Mapping
from datetime import datetime

from libs.audit.chain import Link, seal
from libs.contracts import audit
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.runtime.kv import Conflict
from libs.runtime.locks import KeyedLocks
from libs.runtime.service import Handler
from services.audit.store import ChainStore

__all__ = ["Handlers"]

Clock = Callable[[], datetime]
_ATTEMPTS = 16


class Handlers:
    def __init__(self, store: ChainStore, clock: Clock) -> None:
        self._store, self._clock = store, clock
        self._locks = KeyedLocks()
        # Each org's tail as this replica last wrote it; a stale one loses the append's
        # compare-and-set and is read again.
        self._tails: dict[str, tuple[int, Link]] = {}

    async def append(self, req: audit.Append, p: Principal) -> audit.AuditRecord:
        draft = audit.AuditRecord(
            org=req.org,
            n=0,
            at=req.at or self._clock(),
            service=p.sub.removeprefix("service:"),  # the bus proved who asks
            actor=req.actor,
            action=req.action,
            target=req.target,
            data=req.data,
        )
        async with self._locks.hold(req.org):
            for _ in range(_ATTEMPTS):
                seq, link = self._tails.get(req.org) or await self._store.tail(req.org)
                record = seal(draft, after=link)
                try:
                    seq = await self._store.append(record, after_seq=seq)
                except Conflict:  # another replica appended first
                    self._tails.pop(req.org, None)
                    continue
                self._tails[req.org] = (seq, Link(record.n, record.hash))
                return record
        raise Refused("audit-contended", 503, f"the chain of {req.org} kept moving; retry")

    def table(self) -> Mapping[Subject, Handler]:
        return {audit.APPEND: self.append}
