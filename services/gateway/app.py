"""The gateway: `init_app()` builds the aiohttp application that tests and `main` both use."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from importlib.metadata import version
from importlib.resources import files

import msgspec
from aiohttp import web
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from libs.contracts import SERVICES
from libs.contracts.permissions import GATEWAY
from libs.contracts.registry import ServiceContract
from libs.runtime import bus
from libs.runtime.ops import start_ops_server
from services.gateway.events import room_stream
from services.gateway.forward import NATS, forwarding
from services.gateway.limits import IdempotencyKeys, RateLimiter
from services.gateway.mcp import mcp_endpoint
from services.gateway.middlewares import headed, problems
from services.gateway.openapi import openapi
from services.gateway.pages import HARDENED, PAGES, SCRIPTS, policy
from services.gateway.pending import pending_list, pending_stream
from services.gateway.readiness import readiness
from services.gateway.routes import ROUTES, Route
from services.gateway.settings import GatewaySettings
from services.gateway.streams import STREAMS, OpenStreams, bus_back, close_streams
from services.gateway.watch import mod_watch
from services.gateway.webhooks import webhook

__all__ = ["NATS", "OPS", "REDIS", "init_app"]

CleanupContext = Callable[[web.Application], AsyncIterator[None]]

REDIS = web.AppKey("redis", Redis)
OPS = web.AppKey("ops", web.AppRunner)
FIRST_CONNECT_S = 5.0
MAX_BODY = 1024 * 1024
_JSON = "application/json"
_decode = msgspec.json.Decoder().decode


def init_app(
    settings: GatewaySettings,
    *,
    routes: Sequence[Route] = ROUTES,
    services: Sequence[ServiceContract] = SERVICES,
) -> web.Application:
    redis = Redis.from_url(
        settings.redis_url,
        socket_timeout=settings.redis_timeout,
        socket_connect_timeout=settings.redis_timeout,
        # Once more at once, for a pooled connection a restarted Redis closed; never after a
        # timeout, when the command may have run: a claim run twice would find itself in use.
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )
    app = web.Application(client_max_size=MAX_BODY, middlewares=[problems])
    app.on_response_prepare.append(headed)
    app[REDIS] = redis
    app[STREAMS] = OpenStreams(settings.streams_per_caller)
    app.on_shutdown.append(close_streams)
    app.cleanup_ctx.append(_ops(settings))
    app.cleanup_ctx.append(_nats(settings))
    app.cleanup_ctx.append(_redis)
    _add_probes(app, services)
    _add_pages(app)
    _add_api(app, settings, routes, RateLimiter(redis, settings.rate_limit), IdempotencyKeys(redis))
    return app


def _add_probes(app: web.Application, services: Sequence[ServiceContract]) -> None:
    """`/healthz` (the process answers), `/readyz` (every service on the bus) and
    `/readyz/{service}` (one; the gateway itself: it is on the bus)."""
    by_name = {s.name: s for s in services}

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(request: web.Request) -> web.Response:
        ready, body = await readiness(request.app[NATS], services)
        return web.Response(body=body, status=200 if ready else 503, content_type=_JSON)

    async def readyz_one(request: web.Request) -> web.Response:
        if request.match_info["service"] == GATEWAY:  # itself: it can serve while on the bus
            on_bus = request.app[NATS].is_connected
            body = {"ready": on_bus, "bus": on_bus}
            return web.json_response(body, status=200 if on_bus else 503)
        service = by_name.get(request.match_info["service"])
        if service is None:
            raise web.HTTPNotFound()
        ready, body = await readiness(request.app[NATS], [service])
        return web.Response(body=body, status=200 if ready else 503, content_type=_JSON)

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/readyz/{service}", readyz_one)


def _add_pages(app: web.Application) -> None:
    """The console's pages and their scripts, each page under a policy that runs its own
    script and style alone."""
    package = files("services.gateway")
    for path in PAGES:
        body = package.joinpath(f"{path.rsplit('/', 1)[1]}.html").read_bytes()
        headers = {**HARDENED, "Content-Security-Policy": policy(body)}
        app.router.add_get(path, _served(body, "text/html", headers))
    for path in SCRIPTS:
        body = package.joinpath(path.rsplit("/", 1)[1]).read_bytes()
        app.router.add_get(path, _served(body, "text/javascript", HARDENED))


def _served(
    body: bytes, content_type: str, headers: Mapping[str, str]
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def serve(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type=content_type, charset="utf-8", headers=headers)

    return serve


def _add_api(
    app: web.Application,
    settings: GatewaySettings,
    routes: Sequence[Route],
    limiter: RateLimiter,
    keys: IdempotencyKeys,
) -> None:
    """The OpenAPI document, `/v1/mcp`, and every route of the table, each by its kind's
    handler."""
    document = msgspec.json.encode(openapi(routes, version=version("tether")))

    async def openapi_json(_: web.Request) -> web.Response:
        return web.Response(body=document, content_type=_JSON)

    app.router.add_get("/v1/openapi.json", openapi_json)
    key, timeout = settings.jwt_key, settings.request_timeout
    app.router.add_post(
        "/v1/mcp",
        mcp_endpoint(
            key=key, limiter=limiter, keys=keys, timeout=timeout, late_timeout=settings.late_timeout
        ),
    )
    rereading = {"stream": room_stream, "pending_stream": pending_stream}  # told at most once
    for route in routes:
        if route.kind == "webhook":
            handler = webhook(route, public_url=settings.public_url, timeout=timeout, most=MAX_BODY)
        elif route.kind in rereading:
            handler = rereading[route.kind](
                route, key=key, limiter=limiter, timeout=timeout, reread=settings.stream_reread
            )
        elif route.kind == "watch":
            handler = mod_watch(
                route, key=key, limiter=limiter, timeout=timeout, reread=settings.stream_reread
            )
        elif route.kind == "pending":
            handler = pending_list(route, key=key, limiter=limiter, timeout=timeout)
        else:
            handler = forwarding(
                route,
                key=key,
                limiter=limiter,
                keys=keys,
                timeout=timeout,
                late_timeout=settings.late_timeout,
            )
        app.router.add_route(route.method, route.path, handler)
        if route.method == "GET":
            # Every GET answers HEAD too (RFC 9110 §9.3.2): its headers, with no body.
            app.router.add_route("HEAD", route.path, handler)


def _nats(settings: GatewaySettings) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        app[NATS], first = await bus.connecting(
            settings.nats_url,
            user=settings.nats_user or GATEWAY,
            password=settings.nats_password,
            name=GATEWAY,
            reconnected=lambda: bus_back(app),
        )
        # The port opens once the gateway is on the bus, so that a replica sharing it (or a
        # client that does not wait for readiness) is not refused for the moment it takes;
        # or after FIRST_CONNECT_S without a server: started in a NATS outage, it answers
        # meanwhile, its probes and a 503 `bus-unavailable` for what needs the bus.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(first), FIRST_CONNECT_S)
        yield
        await bus.let_go(app[NATS])

    return context


async def _redis(app: web.Application) -> AsyncIterator[None]:
    yield
    await app[REDIS].aclose()


def _ops(settings: GatewaySettings) -> CleanupContext:
    """/metrics on a port of its own, as every service's: the API's port is the one
    the internet reaches, and what the gateway counts is for its operator alone. Its probes
    are there too, as on the API's port."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        app[OPS] = await start_ops_server(
            settings.metrics_host,
            settings.metrics_port,
            ready=lambda: NATS in app and app[NATS].is_connected,
        )
        yield
        await app[OPS].cleanup()

    return context
