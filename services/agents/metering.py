"""The meter: run ends read from METER in order, each added once to its org's month."""

import msgspec
from nats.aio.msg import Msg

from libs.contracts import codec
from libs.contracts.agents import RunEnded
from services.agents.domain import meter
from services.agents.store import AgentStore

__all__ = ["Counted", "Metering"]

_run = codec.decoder(RunEnded)


class Counted(msgspec.Struct, frozen=True):
    """A run's end and its place on METER, which the meter counts each run by once."""

    run: RunEnded
    seq: int


class Metering:
    def __init__(self, store: AgentStore) -> None:
        self._store = store

    @staticmethod
    def read(msg: Msg) -> Counted:
        return Counted(run=_run.decode(msg.data), seq=msg.metadata.sequence.stream)

    async def handle(self, counted: Counted) -> None:
        run, seq = counted.run, counted.seq
        # One counted before a redelivery changes nothing.
        await self._store.change_meter(
            run.org, meter.month_of(run), run.agent, lambda before: meter.record(before, run, seq)
        )
