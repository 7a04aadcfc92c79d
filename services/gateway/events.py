"""Server-sent events: a room's new messages, streamed to a member.

The rooms service says whether the caller is a member (the route's subject); the live
subject is subscribed before the history is read, so nothing stored in between is missed.
A live message says the history has grown: what was stored since the stream's last message
is read (exactly, as the stream's leader holds it) and sent, so each message is sent once,
in seq order, even when two rooms replicas publish what they stored out of that order, or
one dies between storing a message and publishing it. Live messages queued meanwhile that
the read covered are dropped. What is published while the gateway is off the bus never
reaches it, so once back each stream reads what was stored since its last message; and a
live word is sent at most once, so every while each stream reads so too.
`Last-Event-ID` (or `?after=`) resumes. How a message that left by a line fares comes as
`delivery` events `{seq, delivery}`, each read as it stands when its live word comes, so a
move published late by another replica never sets it back (no id: the history read on
resuming carries each message's delivery as it is then). One that moved while the gateway
was off the bus, or whose word was lost, is read again with the others it showed as moving
(within the hour) once the stream is back, and every while.
"""

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import msgspec
from aiohttp import web
from nats.aio.client import Client
from nats.aio.subscription import Subscription

from libs.contracts import codec, rooms
from libs.contracts.base import MAX_INT
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from services.gateway.forward import NATS, ask, caller, request_of
from services.gateway.limits import RateLimiter
from services.gateway.org_agents import told_removed
from services.gateway.routes import Route
from services.gateway.streams import (
    AGAIN,
    BUS_BACK,
    END,
    EVENT_STREAM,
    STREAMS,
    head,
    next_of,
)
from services.gateway.tokens import refused_after

__all__ = ["lately_moved", "room_stream"]

_DELIVERY = b"\x00delivery"  # marks a delivery update among the live messages
_BACKLOG = 1000  # messages a slow client may fall behind before it is closed (and resumes)
_MOVING = ("queued", "sent")  # a delivery a carrier's word may still move
# A carrier reports a text's fate in minutes. One whose last move is older is read again
# no more (a room's every message since it would be paged each time); a move after that
# whose word is lost is shown on resuming, the history carrying each delivery as it is.
_MOVING_FOR = timedelta(hours=1)


class _Seq(msgspec.Struct):
    seq: int  # of a live message, all that is read of it


_seq = msgspec.json.Decoder(_Seq).decode
_page = codec.decoder(rooms.MessagePage).decode


def room_stream(
    route: Route, *, key: str, limiter: RateLimiter, timeout: float, reread: float
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(http: web.Request) -> web.StreamResponse:
        principal = await caller(route, http, key=key, limiter=limiter)
        authorization = http.headers.get("Authorization")
        until = refused_after(authorization, key)
        nc = http.app[NATS]
        problem, body = await ask(
            nc, route.subject, await request_of(route, http), principal, timeout=timeout
        )
        if problem is not None:
            return web.Response(body=body, status=problem, content_type="application/problem+json")
        room_id = http.match_info["id"]
        after = _cursor(http)
        if http.method == "HEAD":
            return head(http, principal)
        live: asyncio.Queue[bytes] = asyncio.Queue(_BACKLOG)
        overflowed = asyncio.Event()

        def put(data: bytes) -> None:
            try:
                live.put_nowait(data)
            except asyncio.QueueFull:
                overflowed.set()

        async def on_live(msg) -> None:
            put(msg.data)

        async def on_delivery(msg) -> None:
            put(_DELIVERY + msg.data)

        http.app[STREAMS].open(principal, live)
        subs: list[Subscription] = []
        response = web.StreamResponse(headers=EVENT_STREAM)
        stream = _RoomStream(nc, principal, room_id, response, timeout=timeout)

        try:
            # The members' messages, and the caller's own (their agent's notices and questions).
            for subject in rooms.live_subjects(room_id, principal.sub):
                subs.append(await nc.subscribe(subject, cb=on_live))
            subs.append(await nc.subscribe(rooms.delivery_subject(room_id), cb=on_delivery))
            await response.prepare(http)
            last = await stream.stored_since(after)
            again_at = time.monotonic() + reread  # however busy: new words move no delivery
            while last is not None and not overflowed.is_set():
                data = await next_of(live, response, until, again_at)
                if data == END:
                    break
                if data in (BUS_BACK, AGAIN):  # what was published meanwhile may never come
                    # An org's agent or bot removed since ends its streams at their turn.
                    if await told_removed(nc, principal, authorization, key, response):
                        break
                    last = await stream.stored_since(last)
                    if last is not None and not await stream.moved_since_shown():
                        break
                    again_at = time.monotonic() + reread
                    continue
                # Each live word is a doorbell, read from the room as it stands. Sent as it
                # came, a message could pass one stored just before it (two rooms replicas
                # each publishing what they stored), which was then never sent, and one
                # whose replica died before publishing it never came at all; a delivery's
                # older move, published last by another replica, would stand at the client.
                seq = _seq(data.removeprefix(_DELIVERY)).seq
                if seq > last:  # the history read sends each message with its delivery
                    last = await stream.stored_since(last)
                elif data.startswith(_DELIVERY) and not await stream.delivery_now(seq):
                    break
        except ConnectionResetError:
            pass  # the client went away
        finally:
            http.app[STREAMS].close(live)
            for sub in subs:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
        return response

    return handler


class _RoomStream:
    """What one stream has sent of its room, and how it reads the room again: each
    message sent once, and the deliveries it showed that a carrier may move still, by seq,
    read again every while (a move's live word may be lost too)."""

    def __init__(
        self, nc: Client, principal: Principal, room: str, response: web.StreamResponse,
        *, timeout: float,
    ) -> None:  # fmt: skip
        self._nc, self._principal, self._room = nc, principal, room
        self._response, self._timeout = response, timeout
        self._moving: dict[int, rooms.Delivery] = {}

    async def stored_since(self, last: int) -> int | None:
        """The room's messages after `last` sent, page by page: the new last, or None if
        they could not be read."""
        while (found := await self._page_after(last, 200)) is not None:
            for message in found.messages:
                await _send(self._response, message.seq, codec.encode(message))
                self._shown(message)
                last = message.seq
            if found.next is None:
                return last
        return None

    async def delivery_now(self, seq: int) -> bool:
        """Message `seq`'s delivery as it stands, sent; False if it could not be read."""
        found = await self._page_after(seq - 1, 1)
        if found is None:
            return False
        for message in found.messages:
            if message.seq == seq and message.delivery is not None:
                await _moved(self._response, message)
                self._shown(message)
        return True

    async def moved_since_shown(self) -> bool:
        """Each delivery shown as moving, and moved within the hour, sent again if it has
        moved since (read page by page from the oldest); False if they could not be read."""
        self._moving = lately_moved(self._moving, datetime.now(UTC))
        if not self._moving:
            return True
        after, newest = min(self._moving) - 1, max(self._moving)
        while after < newest:
            found = await self._page_after(after, 200)
            if found is None:
                return False
            for message in found.messages:
                if message.seq in self._moving and message.delivery != self._moving[message.seq]:
                    await _moved(self._response, message)
                    self._shown(message)
            after = newest if found.next is None else found.next
        return True

    def _shown(self, message: rooms.Message) -> None:
        self._moving.pop(message.seq, None)
        if message.delivery is not None and message.delivery.status in _MOVING:
            self._moving[message.seq] = message.delivery
            if len(self._moving) > _BACKLOG:
                del self._moving[next(iter(self._moving))]

    async def _page_after(self, after: int, limit: int) -> rooms.MessagePage | None:
        """The room's messages after `after`, as the caller reads them; None if they could
        not be read (the stream then ends, for the client to resume)."""
        page = codec.encode(rooms.ListMessages(id=self._room, after=after, limit=limit))
        try:
            problem, body = await ask(
                self._nc, rooms.MESSAGES, page, self._principal, timeout=self._timeout
            )
        except Refused:
            return None
        return None if problem is not None else _page(body)


def lately_moved(moving: dict[int, rooms.Delivery], now: datetime) -> dict[int, rooms.Delivery]:
    """The deliveries of `moving` a carrier may still move: those it moved within the
    hour, in the order shown."""
    return {seq: d for seq, d in moving.items() if now - d.at <= _MOVING_FOR}


def _cursor(http: web.Request) -> int:
    """A message seq: ASCII digits within what a stream holds (`str.isdigit` takes "²",
    which `int` refuses)."""
    raw = http.headers.get("Last-Event-ID") or http.query.get("after") or "0"
    if not re.fullmatch(r"[0-9]{1,16}", raw) or int(raw) > MAX_INT:
        raise Refused("invalid-request", 422, "Last-Event-ID and after are message seqs")
    return int(raw)


async def _send(response: web.StreamResponse, seq: int, data: bytes) -> None:
    await response.write(b"id: %d\nevent: message\ndata: %s\n\n" % (seq, data))


async def _moved(response: web.StreamResponse, message: rooms.Message) -> None:
    update = codec.encode({"seq": message.seq, "delivery": message.delivery})
    await response.write(b"event: delivery\ndata: %s\n\n" % update)
