"""`GET /v1/mod/watch`: server-sent events from the KV plane's own watchers (hip-0528 §9.5).

One `layer` event `{layer, version}` for each new version of the org's layer or the caller's
own, and one `draft` event `{layer, id, state}` for each change to a draft over either that
the caller may see (an org's drafts: its admins, and the agent that wrote each). The
watchers are ordered consumers on the mod service's buckets, filtered to the caller's own
keys, so nothing another person holds is ever read, and nothing is kept between events.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web
from nats.js.kv import KeyValue

from libs.contracts.base import key_token
from libs.contracts.mod import DRAFTS_BUCKET, LAYERS_BUCKET, HeldDrafts
from libs.contracts.principal import Principal
from services.gateway.events import KEEPALIVE_S, STREAMS
from services.gateway.forward import NATS, caller
from services.gateway.limits import RateLimiter
from services.gateway.routes import Route

__all__ = ["mod_watch"]

_END = b""
_last = msgspec.json.Decoder(HeldDrafts).decode


def mod_watch(
    route: Route, *, key: str, limiter: RateLimiter
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(http: web.Request) -> web.StreamResponse:
        p = await caller(route, http, key=key, limiter=limiter)
        js = http.app[NATS].jetstream()
        layers = await js.key_value(LAYERS_BUCKET)
        drafts = await js.key_value(DRAFTS_BUCKET)
        events: asyncio.Queue[bytes] = asyncio.Queue(1000)
        own = {"org": f"{p.org}.org", "user": f"{p.org}.user.{key_token(p.sub)}"}
        tasks = [
            asyncio.create_task(_follow(kv, k, layer, p, events))
            for kv in (layers, drafts)
            for layer, k in own.items()
        ]
        http.app[STREAMS].add(events)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        try:
            await response.prepare(http)
            await response.write(b": watching\n\n")
            while True:
                try:
                    event = await asyncio.wait_for(events.get(), KEEPALIVE_S)
                except TimeoutError:
                    await response.write(b": keepalive\n\n")
                    continue
                if event == _END:
                    break
                await response.write(event)
        except ConnectionResetError:
            pass  # the client went away
        finally:
            http.app[STREAMS].discard(events)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return response

    return handler


async def _follow(
    kv: KeyValue, key: str, layer: str, p: Principal, events: asyncio.Queue[bytes]
) -> None:
    """Each change to `key` after the watch began, as an event."""
    watcher = await kv.watch(key)
    started = False
    try:
        async for entry in watcher:
            if entry is None:
                started = True  # what was stored before the watch began is not news
                continue
            if not started:
                continue
            if kv._name == LAYERS_BUCKET:
                data = {"layer": layer, "version": entry.revision}
                await events.put(_event("layer", data))
            elif entry.value and (last := _last(entry.value).last) is not None:
                keeps = not p.is_agent and (layer == "user" or "admin" in p.roles)
                if keeps or (p.act is not None and p.act == last.act):
                    data = {"layer": layer, "id": last.id, "state": last.state}
                    await events.put(_event("draft", data))
    finally:
        with contextlib.suppress(Exception):
            await watcher.stop()


def _event(name: str, data: dict[str, object]) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (name.encode(), msgspec.json.encode(data))
