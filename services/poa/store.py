"""The poa service's own buckets: grants (poa-grants) and the spend ledger (poa-ledger).

Keys are `<org>.<owner>.<grant id>[.<month>]`, so every read names the person: a lookup
without the owner cannot even be written.
"""

from collections.abc import Callable

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.poa import GrantRecord
from libs.runtime.kv import Record, current, open_bucket, swap, write_at
from services.poa.domain.ledger import RootLedger

__all__ = ["GrantStore", "LedgerStore", "open_stores"]

_grant = codec.decoder(GrantRecord)
_ledger = codec.decoder(RootLedger)


async def open_stores(
    js: JetStreamContext, *, replicas: int = 1
) -> tuple["GrantStore", "LedgerStore"]:
    grants = await open_bucket(
        js, KeyValueConfig(bucket="poa-grants", history=8, replicas=replicas)
    )
    ledger = await open_bucket(
        js, KeyValueConfig(bucket="poa-ledger", history=1, replicas=replicas)
    )
    return GrantStore(grants), LedgerStore(ledger)


class GrantStore:
    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, org: str, owner: str, grant_id: str) -> GrantRecord | None:
        try:
            entry = await self._kv.get(_key(org, owner, grant_id))
        except KeyNotFoundError:
            return None
        return None if entry.value is None else _grant.decode(entry.value)

    async def create(self, record: GrantRecord) -> None:
        await write_at(self._kv, _key(record.org, record.owner, record.id), codec.encode(record), 0)

    async def change(
        self, record: GrantRecord, change: Callable[[GrantRecord], GrantRecord]
    ) -> GrantRecord:
        """The grant after `change`, by compare-and-set on the grant as stored now."""
        key = _key(record.org, record.owner, record.id)
        _, after = await swap(self._kv, key, change, decode=_grant.decode, default=record)
        return after

    async def of_owner(self, org: str, owner: str) -> list[GrantRecord]:
        entries = await current(self._kv, _key(org, owner, "*"))
        return [_grant.decode(e.value) for e in entries]


class LedgerStore:
    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def change(
        self,
        org: str,
        owner: str,
        root_id: str,
        month: str,
        change: Callable[[RootLedger], RootLedger],
        *,
        record: Record | None = None,
    ) -> tuple[RootLedger, RootLedger]:
        """The month's ledger of root grant `root_id`'s tree before and after `change`, by
        compare-and-set (an empty one if none)."""
        return await swap(
            self._kv,
            _key(org, owner, root_id, month),
            change,
            decode=_ledger.decode,
            default=RootLedger(month=month),
            record=record,
        )


def _key(org: str, owner: str, *rest: str) -> str:
    return ".".join((org, key_token(owner), *rest))
