"""The meter: run ends read from METER in order, each added once to its org's month."""

from nats.aio.msg import Msg

from libs.contracts import codec
from libs.contracts.agents import RunEnded
from libs.runtime.kv import Conflict
from services.agents.domain import meter
from services.agents.store import AgentStore

__all__ = ["Metering"]

_run = codec.decoder(RunEnded)


class Metering:
    def __init__(self, store: AgentStore) -> None:
        self._store = store

    async def handle(self, msg: Msg) -> None:
        run, seq = _run.decode(msg.data), msg.metadata.sequence.stream
        while True:
            month, revision = await self._store.meter(run.org, meter.month_of(run))
            after = meter.record(month, run, seq)
            if after is month:
                return  # counted before a redelivery
            try:
                await self._store.put_meter(run.org, after, revision)
                return
            except Conflict:
                continue
