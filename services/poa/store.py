"""The poa service's own buckets: grants (poa-grants) and the spend ledger (poa-ledger).

Keys are `<org>.<owner>.<grant id>[.<month>]`, so every read names the person: a lookup
without the owner cannot even be written.
"""

from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.poa import GrantRecord
from libs.runtime.kv import current, open_bucket, write_at
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

    async def get(self, org: str, owner: str, grant_id: str) -> tuple[GrantRecord, int] | None:
        try:
            entry = await self._kv.get(_key(org, owner, grant_id))
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        return _grant.decode(entry.value), entry.revision

    async def create(self, record: GrantRecord) -> None:
        await write_at(self._kv, _key(record.org, record.owner, record.id), codec.encode(record), 0)

    async def replace(self, record: GrantRecord, revision: int) -> None:
        key = _key(record.org, record.owner, record.id)
        await write_at(self._kv, key, codec.encode(record), revision)

    async def of_owner(self, org: str, owner: str) -> list[tuple[GrantRecord, int]]:
        entries = await current(self._kv, _key(org, owner, "*"))
        return [(_grant.decode(e.value), e.revision) for e in entries]


class LedgerStore:
    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def get(self, org: str, owner: str, root_id: str, month: str) -> tuple[RootLedger, int]:
        """The month's ledger of root grant `root_id`'s tree and its revision; an empty one
        at revision 0 if none."""
        try:
            entry = await self._kv.get(_key(org, owner, root_id, month))
        except KeyNotFoundError:
            return RootLedger(month=month), 0
        return _ledger.decode(entry.value), entry.revision

    async def put(
        self, org: str, owner: str, root_id: str, books: RootLedger, revision: int
    ) -> None:
        """Compare-and-set: Conflict if the ledger changed since `revision` was read."""
        await write_at(
            self._kv, _key(org, owner, root_id, books.month), codec.encode(books), revision
        )


def _key(org: str, owner: str, *rest: str) -> str:
    return ".".join((org, key_token(owner), *rest))
