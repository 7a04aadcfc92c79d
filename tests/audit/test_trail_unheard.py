"""A change's record stored, and its answer lost on the way back (the caller's NATS node
stalled, or its link): the caller was told nothing, made no change, and answered 503; the
trail named the change as made. Looked for after a load on the cluster shape with two of
its three nodes stopped now and then left one act more recorded as allowed than charged
(once, in counts that could not say which act). The caller now asks again, `abandoned`,
and the record is followed by `<action>.abandoned`.

The lost answer is made here by a TCP proxy between the caller and its server, which holds
what the server sends while it is told to."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import nats
import pytest

from libs.audit.reading import records
from libs.audit.trail import AuditUnavailable, Trail
from libs.contracts.permissions import inbox_prefix
from libs.contracts.principal import Principal
from tests.personal.conftest import eventually

ADA = Principal(org="acme", sub="acme/ada")
CREATE = "rooms.room.create"


class Proxy:
    """Bytes passed between a client and `upstream`, those coming back held while `held`."""

    def __init__(self, upstream: str) -> None:
        where = urlsplit(upstream)
        self._upstream = (where.hostname, where.port)
        self._open = asyncio.Event()
        self._open.set()
        self._pumps: set[asyncio.Task[None]] = set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._joined, "127.0.0.1", 0)
        try:
            yield f"nats://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        finally:
            server.close()
            for pump in self._pumps:
                pump.cancel()
            await asyncio.gather(*self._pumps, return_exceptions=True)

    async def _joined(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        for pump in (
            self._pump(reader, up_writer, gate=None),
            self._pump(up_reader, writer, gate=self._open),
        ):
            task = asyncio.create_task(pump)
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, gate: asyncio.Event | None
    ) -> None:
        try:
            while data := await reader.read(65536):
                if gate is not None:
                    await gate.wait()
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def unheard_trail(stack, audit_service) -> AsyncIterator[tuple[Trail, Proxy]]:
    """A Trail whose connection crosses a Proxy; its wait short, to keep the test short."""
    proxy = Proxy(stack.nats_url)
    async with proxy.serving() as url:
        nc = await nats.connect(
            url, user="echo", password=stack.passwords["echo"], inbox_prefix=inbox_prefix("echo")
        )
        try:
            trail = Trail(nc, service="echo", timeout=1.5)
            yield trail, proxy
        finally:
            proxy.release()
            await trail.settle()
            await nc.close()


async def test_a_record_whose_answer_never_came_is_marked_abandoned(unheard_trail, operator, org):
    trail, proxy = unheard_trail
    await trail.append(org, actor=ADA, action="test.before")
    proxy.hold()
    try:
        with pytest.raises(AuditUnavailable):
            async with trail.change(org, actor=ADA, action=CREATE, target="r1"):
                pytest.fail("a change whose record was not answered was made")
    finally:
        proxy.release()

    async def marked() -> list | None:
        found = await records(operator.jetstream(), org)
        return found if any(r.action == f"{CREATE}.abandoned" for r in found) else None

    found = await eventually(marked, timeout=15)
    [made] = [r for r in found if r.action == CREATE]
    assert [(r.action, r.data) for r in found] == [
        ("test.before", {}),
        (CREATE, {}),
        (f"{CREATE}.abandoned", {"record": made.n}),
    ]
