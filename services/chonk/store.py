"""The chonk service's buckets:

    chonk-runs     <org>.<run id>                       a run's report
                   declined.<org>.<handoff id>          a handoff its receiver declined
                   proposed.<room>.<seq>                a message held for its decider's yes
                   outside.<org>.<chonk>                when it proposed outside its allowlist
                   modes.<org>.<chonk>                  its function modes (RC-MGR-01's PROPOSE)
    chonk-memory   facts.<org>.<person>.<fact id>      a fact about a person
                   reads.<org>.<person>                 who read that person's facts, for what

Every key names the org, and a person's the person.
"""

from collections.abc import Callable
from datetime import datetime, timedelta

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.chonk import HandoffRequest, MemoryRead, RunReport
from libs.contracts.rooms import Tell
from libs.runtime.kv import current, open_bucket, swap
from services.chonk.domain.memory import MemoryFact

__all__ = ["ChonkStore", "open_store"]

_fact = codec.decoder(MemoryFact)
_report = codec.decoder(RunReport)
_handoff = codec.decoder(HandoffRequest)
_proposal = codec.decoder(Tell).decode
_times = msgspec.json.Decoder(list[datetime]).decode
_modes = msgspec.json.Decoder(dict[str, str]).decode
_reads = msgspec.json.Decoder(list[MemoryRead])


class ChonkStore:
    def __init__(self, runs: KeyValue, memory: KeyValue) -> None:
        self._runs, self._memory = runs, memory

    async def put_report(self, org: str, report: RunReport) -> None:
        await self._runs.put(f"{org}.{report.id}", codec.encode(report))

    async def put_decline(self, request: HandoffRequest) -> None:
        """A declined handoff, kept to see two Chonks disagree twice."""
        key = f"declined.{request.tenant_id}.{request.id}"
        await self._runs.put(key, codec.encode(request))

    async def declines(self, tenant: str) -> list[HandoffRequest]:
        entries = await current(self._runs, f"declined.{tenant}.*")
        return [_handoff.decode(e.value) for e in entries]

    async def put_proposal(self, room: str, seq: int, proposal: Tell) -> None:
        await self._runs.put(f"proposed.{room}.{seq}", codec.encode(proposal))

    async def proposal(self, room: str, seq: int) -> Tell | None:
        """What question `seq` of `room` holds for its decider's yes, if it is a proposal."""
        try:
            entry = await self._runs.get(f"proposed.{room}.{seq}")
        except KeyNotFoundError:
            return None
        return None if not entry.value else _proposal(entry.value)

    async def drop_proposal(self, room: str, seq: int) -> None:
        await self._runs.delete(f"proposed.{room}.{seq}")

    async def add_outside(
        self, org: str, chonk_id: str, at: list[datetime], now: datetime
    ) -> list[datetime]:
        """Every time `chonk_id` proposed outside its allowlist in the past week, `at` too."""
        week = now - timedelta(days=7)
        _, after = await swap(
            self._runs,
            f"outside.{org}.{chonk_id}",
            lambda seen: [t for t in [*seen, *at] if t > week],
            decode=_times,
            default=[],
        )
        return after

    async def modes(self, org: str, chonk_id: str) -> dict[str, str]:
        try:
            entry = await self._runs.get(f"modes.{org}.{chonk_id}")
        except KeyNotFoundError:
            return {}
        return _modes(entry.value) if entry.value else {}

    async def put_modes(self, org: str, chonk_id: str, modes: dict[str, str]) -> None:
        await self._runs.put(f"modes.{org}.{chonk_id}", msgspec.json.encode(modes))

    async def report(self, org: str, run_id: str) -> RunReport | None:
        try:
            entry = await self._runs.get(f"{org}.{run_id}")
        except KeyNotFoundError:
            return None
        return _report.decode(entry.value)

    async def facts(self, org: str, person: str) -> list[MemoryFact]:
        entries = await current(self._memory, f"facts.{org}.{key_token(person)}.*")
        return [_fact.decode(e.value) for e in entries]

    async def change_fact(
        self,
        org: str,
        person: str,
        fact_id: str,
        change: Callable[[MemoryFact | None], MemoryFact | None],
    ) -> MemoryFact | None:
        _, after = await swap(
            self._memory,
            f"facts.{org}.{key_token(person)}.{fact_id}",
            change,
            decode=_fact.decode,
            default=None,
        )
        return after

    async def reads(self, org: str, person: str) -> list[MemoryRead]:
        try:
            entry = await self._memory.get(f"reads.{org}.{key_token(person)}")
        except KeyNotFoundError:
            return []
        return _reads.decode(entry.value)

    async def read_by(self, org: str, person: str, read: MemoryRead) -> None:
        await swap(
            self._memory,
            f"reads.{org}.{key_token(person)}",
            lambda reads: [*reads, read][-200:],
            decode=_reads.decode,
            default=[],
        )


async def open_store(js: JetStreamContext, *, replicas: int = 1) -> ChonkStore:
    runs = await open_bucket(js, KeyValueConfig(bucket="chonk-runs", history=1, replicas=replicas))
    memory = await open_bucket(
        js, KeyValueConfig(bucket="chonk-memory", history=4, replicas=replicas)
    )
    return ChonkStore(runs, memory)
