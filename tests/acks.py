"""What each reader of a stream has said of the messages it was given, heard off the bus:
how a test waits for a negative ("nothing was drafted") without a sleep."""

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import nats
from nats.js.api import PubAck
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError

__all__ = ["SETTLES_S", "Acks"]

# How long a wait for what must come (a reader's ack, a state reached) allows: a whole
# `make test`, two workers on a busy machine, has met 10 s. A green run never waits it out.
SETTLES_S = 20


class Acks:
    """What each reader has said of each message it was given, as it tells the server: a
    durable's acknowledgement, refusal for good (`+TERM`) or hand-back (`-NAK`) of a stream
    seq, read off the acks' own subjects (`$JS.ACK.<stream>.<durable>.<delivered>.<seq>.…`)
    from `heard_from_now` on. A negative ("nothing was drafted") waits for the test's own
    messages to be done with. A reader's acknowledged floor, or the count it has in hand,
    is not that: a message an earlier test left it, tried again under this test's
    services (a model that is down), holds either back for minutes."""

    _DONE = frozenset((b"", b"+ACK", b"+TERM"))

    def __init__(self, js: JetStreamContext, since: Mapping[str, int]) -> None:
        self._js, self._since = js, since
        self._said: dict[tuple[str, str, int], set[bytes]] = {}

    @classmethod
    async def heard_from_now(cls, nc: nats.NATS) -> "Acks":
        js = nc.jetstream()
        since = {info.config.name: info.state.last_seq for info in await js.streams_info()}
        acks = cls(js, since)
        await nc.subscribe("$JS.ACK.>", cb=acks._heard)
        await nc.flush()  # subscribed at the server before the test says anything
        return acks

    async def _heard(self, msg: Any) -> None:
        tokens = msg.subject.split(".")  # a server with no domain: nine tokens
        if len(tokens) == 9:
            word = msg.data.split(b" ", 1)[0]  # "+TERM reason", "-NAK {delay}"
            self._said.setdefault((tokens[2], tokens[3], int(tokens[5])), set()).add(word)

    async def done(self, durable: str, *stored: PubAck) -> None:
        """Until `durable` is done with each message `stored` (acknowledged, or refused
        for good)."""
        for stream in {s.stream for s in stored}:
            await self._until(stream, durable, [s.seq for s in stored if s.stream == stream])

    async def tried(self, durable: str, *stored: PubAck) -> None:
        """Until `durable` has tried each message `stored` once: done with it, or handed it
        back to be tried again."""
        for stream in {s.stream for s in stored}:
            seqs = [s.seq for s in stored if s.stream == stream]
            await self._until(stream, durable, seqs, said=self._DONE | {b"-NAK"})

    async def handed_back(self, stream: str, durable: str, timeout: float = SETTLES_S) -> None:
        """Until `durable` has handed back a message that came on `stream` since the test
        began, to be tried again."""
        since, deadline = self._since.get(stream, 0), time.monotonic() + timeout
        while not any(
            (s, d) == (stream, durable) and seq > since and b"-NAK" in words
            for (s, d, seq), words in self._said.items()
        ):
            assert time.monotonic() < deadline, f"{durable} handed back nothing in {timeout} s"
            await asyncio.sleep(0.05)

    async def caught_up(self, stream: str, durable: str) -> None:
        """Until `durable` is done with every message it reads that came on `stream`
        since the test began."""
        js = self._js
        last = (await js.stream_info(stream)).state.last_seq
        config = (await js.consumer_info(stream, durable)).config
        ours = []
        for subject in config.filter_subjects or [config.filter_subject or ">"]:
            seq = self._since.get(stream, 0) + 1
            while seq <= last:
                try:
                    msg = await js.get_msg(stream, seq, subject=subject, next=True)
                except NotFoundError:
                    break
                if msg.seq <= last:
                    ours.append(msg.seq)
                seq = msg.seq + 1
        await self._until(stream, durable, ours)

    async def _until(
        self, stream: str, durable: str, seqs: list[int], said: frozenset[bytes] = _DONE
    ) -> None:
        """Until `durable` has said one of `said` of each of `seqs` (a message deleted
        meanwhile, taken back by its test, needs nothing said); one that does not come in
        SETTLES_S fails the test, naming it and what holds the reader back."""
        deadline = time.monotonic() + SETTLES_S
        while waiting := [
            seq for seq in seqs if not said & self._said.get((stream, durable, seq), set())
        ]:
            try:
                msg = await self._js.get_msg(stream, waiting[0])
            except NotFoundError:
                seqs.remove(waiting[0])
                continue
            if time.monotonic() > deadline:
                held = await _held_back(self._js, stream, durable)
                raise AssertionError(
                    f"{durable} said none of {sorted(said)} of {stream} {msg.seq} "
                    f"({msg.subject}) in {SETTLES_S} s, {len(waiting)} waiting; {held}"
                )
            await asyncio.sleep(0.05)


async def _held_back(js: JetStreamContext, stream: str, durable: str) -> str:
    """What holds reader `durable` back on `stream`, said for a test that waited on it in
    vain: its acknowledged floor, what it has in hand, and the messages just above."""
    info = await js.consumer_info(stream, durable)
    floor = info.ack_floor.stream_seq
    above = []
    for seq in range(floor + 1, min(floor + 4, info.delivered.stream_seq + 1)):
        try:
            msg = await js.get_msg(stream, seq)
            above.append(f"{seq} {msg.subject} {msg.data[:200]!r}")
        except NotFoundError:
            above.append(f"{seq} deleted")
    return (
        f"{durable} on {stream}: floor {floor}, delivered {info.delivered.stream_seq}, "
        f"{info.num_ack_pending} in hand, {info.num_redelivered} tried again; above the "
        f"floor: {'; '.join(above)}"
    )
