"""`GET /v1/mod/watch`: server-sent events from the KV plane's own watchers (hip-0528 §9.5).

One `layer` event `{layer, version}` for each new version of the org's layer or the caller's
own, and one `draft` event `{layer, id, state}` for each change to a draft over either that
the caller may see (an org's drafts: its admins, and the agent that wrote each). The
watchers are ordered consumers on the mod service's buckets, filtered to the caller's own
keys, so nothing another person holds is ever read, and nothing is kept between events: an
agent's watch of drafts is filtered to the drafts it wrote, and a member who is neither
admin nor agent has no watcher of the org's drafts at all.
"""

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import msgspec
import nats.errors
from aiohttp import web
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from libs.contracts.mod import (
    DRAFTS_BUCKET,
    LAYERS_BUCKET,
    HeldDrafts,
    drafts_key,
    layer_key,
    require_read,
)
from libs.contracts.problem import Refused
from libs.runtime import bus
from libs.runtime.tasks import ended
from services.gateway.forward import NATS, caller, on_bus
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

__all__ = ["mod_watch"]

_last = msgspec.json.Decoder(HeldDrafts).decode
_Watched = tuple[str, str, KeyValue.KeyWatcher, int]  # bucket, layer, its watcher, its floor


def mod_watch(
    route: Route, *, key: str, limiter: RateLimiter, timeout: float, reread: float
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(http: web.Request) -> web.StreamResponse:
        p = await caller(route, http, key=key, limiter=limiter)
        require_read(p)
        if http.method == "HEAD":
            return head(http, p)
        authorization = http.headers.get("Authorization")
        until = refused_after(authorization, key)
        own = {layer: layer_key(p.org, layer, p.sub) for layer in ("org", "user")}
        watched_keys = [(LAYERS_BUCKET, layer, name) for layer, name in own.items()]
        # A layer's drafts are read by whoever keeps them, and an agent reads the ones it
        # wrote: a member who is neither never has the org's read.
        for layer, name in own.items():
            if p.is_agent:
                watched_keys.append((DRAFTS_BUCKET, layer, drafts_key(name, p.sub, p.act)))
            elif layer == "user" or "admin" in p.roles:
                watched_keys.append((DRAFTS_BUCKET, layer, f"{name}.*.*"))
        js = on_bus(http).jetstream()
        events: asyncio.Queue[bytes] = asyncio.Queue(1000)
        http.app[STREAMS].open(p, events)
        tasks: list[asyncio.Task[None]] = []
        response = web.StreamResponse(headers=EVENT_STREAM)
        try:
            watched = await _watching(js, watched_keys, timeout)
            tasks = [asyncio.create_task(_follow(*w, events)) for w in watched]
            await response.prepare(http)
            await response.write(b": watching\n\n")
            again_at = time.monotonic() + reread
            while True:
                event = await next_of(events, response, until, again_at)
                if event == END:
                    break
                if event in (AGAIN, BUS_BACK):
                    # Ordered consumers pick up where they were on their own; an org's agent
                    # or bot removed since ends its watch at its turn.
                    if await told_removed(http.app[NATS], p, authorization, key, response):
                        break
                    again_at = time.monotonic() + reread
                    continue
                await response.write(event)
        except ConnectionResetError:
            pass  # the client went away
        finally:
            http.app[STREAMS].close(events)
            await ended(*tasks)
        return response

    return handler


async def _watching(
    js: JetStreamContext, keys: list[tuple[str, str, str]], timeout: float
) -> list[_Watched]:
    """A watcher of each (bucket, layer, key) of the caller's, each read past what was
    stored before it began, so that whatever is stored once the stream opens is news.
    One that cannot begin (a bucket's stream electing its leader, say) is a 503.

    Each has a floor, the last revision its consumer had delivered once it was read past:
    nats-py marks the stored values read when the consumer's info says none is pending,
    and that answer can overtake the last stored value on the wire, which then follows
    the mark as if it were new. Nothing at or below the floor is news."""
    watched: list[_Watched] = []
    try:
        for bucket, layer, key in keys:
            kv = await js.key_value(bucket)
            watcher = await kv.watch(key)
            watched.append((bucket, layer, watcher, 0))
            while await watcher.updates(timeout) is not None:
                pass
            # nats-py keeps the watcher's consumer on it, and reads its info itself
            info = await watcher._sub.consumer_info()
            watched[-1] = (bucket, layer, watcher, info.delivered.stream_seq)
    except (nats.errors.Error, TimeoutError, bus.NotSent) as exc:
        for _, _, watcher, _ in watched:
            with contextlib.suppress(Exception):
                await watcher.stop()
        raise Refused(
            "watch-unavailable", 503, f"the watch could not begin ({type(exc).__name__}); ask again"
        ) from exc
    return watched


async def _follow(
    bucket: str,
    layer: str,
    watcher: KeyValue.KeyWatcher,
    floor: int,
    events: asyncio.Queue[bytes],
) -> None:
    """Each change to the watched key past `floor`, as an event. The stream ends with its
    watcher, so that a client is never left watching what is no longer watched: it opens
    another."""
    try:
        async for entry in watcher:
            if entry.revision <= floor:
                continue
            if bucket == LAYERS_BUCKET:
                data = {"layer": layer, "version": entry.revision}
                await events.put(_event("layer", data))
            elif entry.value and (last := _last(entry.value).last) is not None:
                data = {"layer": layer, "id": last.id, "state": last.state}
                await events.put(_event("draft", data))
    finally:
        with contextlib.suppress(asyncio.QueueFull):
            events.put_nowait(END)
        with contextlib.suppress(Exception):
            await watcher.stop()


def _event(name: str, data: dict[str, object]) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (name.encode(), msgspec.json.encode(data))
