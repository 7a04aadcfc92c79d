"""Connecting to NATS: wait for the first connect, reconnect forever, and send a request
only while connected."""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

from libs.contracts.permissions import inbox_prefix
from libs.contracts.problem import Unavailable
from libs.runtime.tasks import ended

__all__ = ["AWAY", "PEER_OR_BUS_AWAY", "Connection", "NotSent", "connecting", "flushed", "let_go"]

_log = logging.getLogger(__name__)
# A server is pinged this often, and left for another when three go unanswered: one whose
# machine died closes no connection, and at nats-py's default of 2 min it would be asked
# for up to 6.
PING_INTERVAL_S = 5


async def connecting(
    url: str,
    *,
    user: str,
    password: str,
    name: str,
    reconnected: Callable[[], Awaitable[None]] | None = None,
) -> tuple[Client, asyncio.Task[None]]:
    """A client of `url` as `user` at once, and the task that connects it, as long as it
    takes for a server to be there: a process answers meanwhile (its probes, 503s), and
    waits on the task, or on a stop, as it chooses.

    With no limit on reconnects nats-py retries the first connect too, a second apart, and
    reports each refusal to `error_cb`: a replica that starts before its server (the usual
    order on Kubernetes) waits for it, logging why. A server that stops answering is left
    within three pings (PING_INTERVAL_S). `reconnected` is awaited each time the
    connection is back, its subscriptions at the server again.

    Until the task is done nothing may be subscribed on the client: nats-py would keep a
    subscription made before the first connect where no server hears it. `let_go` cancels
    it if it is still trying. A URL that is no URL is raised here, by the connect's first
    step, which has run by the time this returns."""

    async def on_reconnected() -> None:
        _log.info("nats reconnected")
        if reconnected is not None:
            await reconnected()

    async def on_disconnected() -> None:
        # nats-py says so of a close of our own too: a stop is no fault to warn of.
        if nc.is_closed:
            _log.info("nats closed")
        else:
            _log.warning("nats disconnected")

    nc = Connection()
    first = asyncio.create_task(
        nc.connect(
            url.split(","),
            user=user or None,
            password=password or None,
            name=name,
            inbox_prefix=inbox_prefix(user) if user else "_INBOX",
            max_reconnect_attempts=-1,
            reconnect_time_wait=1,
            allow_reconnect=True,
            connect_timeout=2,
            ping_interval=PING_INTERVAL_S,
            max_outstanding_pings=2,
            error_cb=_on_error,
            disconnected_cb=on_disconnected,
            reconnected_cb=on_reconnected,
        )
    )
    nc.first_connect = first
    await asyncio.sleep(0)  # the connect's first step: it reads the URL, then dials
    if first.done():
        first.result()
    return nc, first


class NotSent(Exception):
    """A request not sent, because the connection is not up: it will not run."""


class Connection(Client):
    """nats-py's client, whose requests are sent only while it is connected.

    nats-py holds what is published while it reconnects and sends it once a server is
    back, long after its asker stopped waiting. A request would run unasked, and a write
    (JetStream's publishes and KV writes are requests) would be stored after its handler
    had answered that it failed, and its record said so. `NotSent` says it did not leave.
    """

    first_connect: "asyncio.Task[None] | None" = None

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        timeout: float = 0.5,
        old_style: bool = False,
        headers: dict[str, Any] | None = None,
    ) -> Msg:
        if not self.is_connected:
            raise NotSent(f"not connected to NATS; {subject} not sent")
        try:
            return await super().request(
                subject, payload, timeout=timeout, old_style=old_style, headers=headers
            )
        except (
            nats.errors.OutboundBufferLimitError,
            nats.errors.ConnectionClosedError,
            nats.errors.ConnectionDrainingError,
        ) as exc:
            raise NotSent(f"the connection to NATS is going; {subject} not sent") from exc


# The bus, or a stream's leader, is away for a moment (a reconnect, a node failing over, an
# election): what met one of these may be asked again, and is nothing to trace.
AWAY: tuple[type[Exception], ...] = (
    NotSent,
    TimeoutError,  # nats-py's is one too
    NoStreamResponseError,
    ServiceUnavailableError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
)
# As AWAY, or a service called answered that it is (503): a line saying so, not a traceback.
PEER_OR_BUS_AWAY: tuple[type[Exception], ...] = (Unavailable, *AWAY)


async def flushed(nc: Client) -> None:
    """Until the server has read everything written on `nc` so far (a subscription made,
    say). nats-py writes a flush's ping at once, ahead of what it still holds to write, so
    that ping's pong alone does not say so: flush until nothing is held, then once more."""
    while nc.pending_data_size:
        await nc.flush()
    await nc.flush()


async def let_go(nc: Connection) -> None:
    """Drain `nc`, finishing what it has in hand, while its server is there; close it when
    the server is gone, for a drain would wait for it and then raise. A first connect still
    trying is cancelled first: it would try on."""
    if nc.first_connect is not None:
        await ended(nc.first_connect)
    if nc.is_connected:
        try:
            await nc.drain()
            return
        except nats.errors.Error:  # the server went away while draining
            _log.warning("nats gone while draining; closing")
    await nc.close()


async def _on_error(exc: Exception) -> None:
    _log.warning("nats error", extra={"error": repr(exc)})
