"""The poa service's own buckets: grants (poa-grants), the spend ledger (poa-ledger), the
decisions of keyed acts a ledger let go, for as long as their key may be sent again
(poa-acts), and the asks put to people (poa-asks).

Keys are `<org>.<owner>.<grant id>[.<month>]` and `<org>.<person>.<ask id>`, so every read
names the person: a lookup without the owner cannot even be written. An ask's question is
found again from its room's answer by `_question.<room>.<seq>`, which holds the ask's key,
and the asks an agent has open to its person hold their places under
`_open.<org>.<person>.<agent>`.
An ask answered or expired, and its question's key, are kept a week by default
(`TETHER_SETTLED_KEPT`), to be read back by the agent that asked and to answer its act
sent again, then the server removes them: kept forever, every ask a person was ever put
was read for their list.
"""

import asyncio
from collections.abc import Callable, Mapping
from datetime import timedelta

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.poa import AskRecord, Decision, GrantRecord
from libs.runtime.kv import Conflict, Read, Record, open_bucket, settle, swap, write_at
from libs.runtime.leader import exact_reads, seen
from libs.runtime.settings import SETTLED_KEPT
from services.poa.domain.ledger import Keyed, RootLedger
from services.poa.domain.open_asks import Place

__all__ = ["AskStore", "GrantStore", "LedgerStore", "open_stores"]

_grant = codec.decoder(GrantRecord)
_ledger = codec.decoder(RootLedger)
_ask = codec.decoder(AskRecord)
_where = msgspec.json.Decoder(tuple[str, str, str]).decode
_keyed = codec.decoder(Keyed | Decision)
_places = codec.decoder(tuple[Place, ...])
# An Idempotency-Key runs once for 24 h (the gateway's promise), an hour's margin on.
ACTS_KEPT_S = 25 * 3600


async def open_stores(
    js: JetStreamContext, *, replicas: int = 1, asks_kept: timedelta = SETTLED_KEPT
) -> tuple["GrantStore", "LedgerStore", "AskStore"]:
    grants = await open_bucket(
        js, KeyValueConfig(bucket="poa-grants", history=8, replicas=replicas)
    )
    ledger = await open_bucket(
        js, KeyValueConfig(bucket="poa-ledger", history=1, replicas=replicas)
    )
    acts = await open_bucket(
        js, KeyValueConfig(bucket="poa-acts", history=1, ttl=ACTS_KEPT_S, replicas=replicas)
    )
    asks = await open_bucket(js, KeyValueConfig(bucket="poa-asks", history=1, replicas=replicas))
    # The buckets are made alike, so their replicas call for one way of reading them exactly.
    exact = await exact_reads(grants)
    return (
        GrantStore(grants, exact),
        LedgerStore(ledger, acts),
        AskStore(asks, exact, kept=asks_kept),
    )


class GrantStore:
    def __init__(self, kv: KeyValue, exact: Read) -> None:
        self._kv, self._exact = kv, exact

    async def get(self, org: str, owner: str, grant_id: str) -> GrantRecord | None:
        """The grant with every change acknowledged before the read: a revocation holds
        from the moment its person is told so."""
        found = await self._exact(self._kv, _key(org, owner, grant_id))
        return _grant.decode(found[0].value) if found and found[0].value else None

    async def create(self, record: GrantRecord) -> None:
        await write_at(self._kv, _key(record.org, record.owner, record.id), codec.encode(record), 0)

    async def change(
        self, record: GrantRecord, change: Callable[[GrantRecord], GrantRecord]
    ) -> GrantRecord:
        """The grant after `change`, by compare-and-set on the grant as stored now."""
        key = _key(record.org, record.owner, record.id)
        _, after = await swap(
            self._kv, key, change, decode=_grant.decode, default=record, read=self._exact
        )
        return after

    async def of_owner(self, org: str, owner: str) -> list[GrantRecord]:
        entries = await self._exact(self._kv, _key(org, owner, "*"))
        return [_grant.decode(e.value) for e in entries]

    async def of_org(self, org: str) -> list[GrantRecord]:
        """Every grant of every person of `org`: read only when the org removes an agent
        that grants may name, never to answer a request."""
        entries = await self._exact(self._kv, f"{org}.*.*")
        return [_grant.decode(e.value) for e in entries]

    async def lineage(self, record: GrantRecord) -> list[GrantRecord]:
        """Its ancestors, root first, read from the store, never from a request."""
        lineage: list[GrantRecord] = []
        parent_id = record.parent_id
        while parent_id is not None:
            found = await self.get(record.org, record.owner, parent_id)
            if found is None:
                break  # the verifier denies a chain link with no parent (V7)
            lineage.insert(0, found)
            parent_id = found.parent_id
        return lineage


class LedgerStore:
    def __init__(self, kv: KeyValue, acts: KeyValue) -> None:
        self._kv, self._acts = kv, acts

    async def acted(self, org: str, owner: str, key: str) -> Keyed | Decision | None:
        """The decision of the act charged under request `key`, kept for a day once its
        ledger let it go."""
        try:
            entry = await self._acts.get(_key(org, owner, key))
        except KeyNotFoundError:
            return None
        return None if entry.value is None else _keyed.decode(entry.value)

    async def keep_acts(
        self, org: str, owner: str, decisions: Mapping[str, Keyed | Decision]
    ) -> None:
        """Keep each decision under its request key for a day (a put: keeping one twice is
        harmless)."""
        await asyncio.gather(
            *(self._acts.put(_key(org, owner, k), codec.encode(d)) for k, d in decisions.items())
        )

    async def read(self, org: str, owner: str, root_id: str, month: str) -> RootLedger:
        try:
            entry = await self._kv.get(_key(org, owner, root_id, month))
        except KeyNotFoundError:
            return RootLedger(month=month)
        return RootLedger(month=month) if entry.value is None else _ledger.decode(entry.value)

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


class AskStore:
    """Read exactly, as the grants are: an ask just put to its person is there to answer
    from any node, and a create that lost to the same act's ask finds that one."""

    def __init__(self, kv: KeyValue, exact: Read, *, kept: timedelta = SETTLED_KEPT) -> None:
        self._kv, self._exact, self._kept = kv, exact, kept

    async def get(self, org: str, person: str, ask_id: str) -> AskRecord | None:
        found = await self._exact(self._kv, _key(org, person, ask_id))
        return _ask.decode(found[0].value) if found and found[0].value else None

    async def create(self, ask: AskRecord, *, record: Record) -> AskRecord:
        """The ask as stored: this one, or the same act's ask stored before it."""
        try:
            async with record(None, ask):
                await write_at(self._kv, _key(ask.org, ask.person, ask.id), codec.encode(ask), 0)
        except Conflict:
            found = await self.get(ask.org, ask.person, ask.id)
            assert found is not None
            return found
        return ask

    async def change(
        self,
        org: str,
        person: str,
        ask_id: str,
        change: Callable[[AskRecord], AskRecord],
        *,
        record: Record | None = None,
    ) -> tuple[AskRecord, AskRecord] | None:
        """The ask before and after `change`, by compare-and-set; None if there is none.
        One that settles is kept for a while, and so is its question's key."""
        before, after = await swap(
            self._kv,
            _key(org, person, ask_id),
            lambda ask: None if ask is None else change(ask),
            decode=_ask.decode,
            default=None,
            kept=lambda ask: None if ask.state == "open" else self._kept,
            record=record,
            read=self._exact,
        )
        if before is None or after is None:
            return None
        if before.state == "open" and after.state != "open" and after.room is not None:
            question = f"_question.{after.room}.{after.question_seq}"
            await settle(self._kv, question, keep=self._kept, read=self._exact)
        return before, after

    async def of_person(self, org: str, person: str) -> list[AskRecord]:
        entries = await self._exact(self._kv, _key(org, person, "*"))
        return [_ask.decode(e.value) for e in entries]

    async def places(self, ask: AskRecord) -> tuple[Place, ...]:
        """The places of the asks its agent has open to its person."""
        found = await self._exact(self._kv, _open_key(ask))
        return _places.decode(found[0].value) if found and found[0].value else ()

    async def change_places(
        self, ask: AskRecord, change: Callable[[tuple[Place, ...]], tuple[Place, ...]]
    ) -> None:
        await swap(
            self._kv,
            _open_key(ask),
            change,
            decode=_places.decode,
            default=(),
            read=self._exact,
        )

    async def put_question(self, ask: AskRecord, room: str, seq: int) -> None:
        where = msgspec.json.encode([ask.org, ask.person, ask.id])
        await self._kv.put(f"_question.{room}.{seq}", where)

    async def asked(self, room: str, seq: int) -> tuple[str, str, str] | None:
        """Which ask question `seq` of `room` puts: (org, person, ask id)."""
        found = await seen(self._kv, f"_question.{room}.{seq}", self._exact)
        return None if found is None else _where(found)


def _key(org: str, owner: str, *rest: str) -> str:
    return ".".join((org, key_token(owner), *rest))


def _open_key(ask: AskRecord) -> str:
    return f"_open.{_key(ask.org, ask.person, key_token(ask.agent))}"
