"""The gateway: `init_app()` builds the aiohttp application that tests and `main` both use."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib.metadata import version

import msgspec
from aiohttp import web
from nats.aio.client import Client
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.asyncio import Redis

from libs.contracts import SERVICES
from libs.contracts.health import HealthRequest
from libs.contracts.permissions import GATEWAY
from libs.contracts.problem import PROBLEM_HEADER
from libs.contracts.registry import ServiceContract
from libs.runtime import bus
from services.gateway.forward import ask, request_of
from services.gateway.limits import IdempotencyKeys, RateLimiter
from services.gateway.middlewares import PRINCIPAL, authenticate, idempotent, problems
from services.gateway.openapi import openapi
from services.gateway.routes import ROUTES, Route
from services.gateway.settings import GatewaySettings

__all__ = ["NATS", "REDIS", "init_app"]

CleanupContext = Callable[[web.Application], AsyncIterator[None]]

NATS = web.AppKey("nats", Client)
REDIS = web.AppKey("redis", Redis)
MAX_BODY = 1024 * 1024
_EMPTY = msgspec.json.encode(HealthRequest())


def init_app(
    settings: GatewaySettings,
    *,
    routes: Sequence[Route] = ROUTES,
    services: Sequence[ServiceContract] = SERVICES,
) -> web.Application:
    redis = Redis.from_url(settings.redis_url)
    app = web.Application(
        client_max_size=MAX_BODY,
        middlewares=[
            problems,
            authenticate(settings.jwt_key, RateLimiter(redis, settings.rate_limit)),
            idempotent(IdempotencyKeys(redis)),
        ],
    )
    app[REDIS] = redis
    app.cleanup_ctx.append(_nats(settings))
    app.cleanup_ctx.append(_redis)
    document = msgspec.json.encode(openapi(routes, version=version("tether")))

    async def openapi_json(_: web.Request) -> web.Response:
        return web.Response(body=document, content_type="application/json")

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(request: web.Request) -> web.Response:
        nc = request.app[NATS]
        answers = await asyncio.gather(*(_health(nc, svc) for svc in services))
        ready = nc.is_connected and all(ok for ok, _ in answers)
        named = zip((s.name for s in services), (a for _, a in answers), strict=True)
        body = {"ready": ready, "services": dict(named)}
        return web.json_response(body, status=200 if ready else 503)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/v1/openapi.json", openapi_json)
    for route in routes:
        app.router.add_route(route.method, route.path, _forward(route, settings.request_timeout))
    return app


def _forward(route: Route, timeout: float) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        payload = await request_of(route, request)
        problem, body = await ask(
            request.app[NATS], route.subject, payload, request[PRINCIPAL], timeout=timeout
        )
        if problem is not None:
            return web.Response(body=body, status=problem, content_type="application/problem+json")
        return web.Response(body=body, status=route.status, content_type="application/json")

    return handler


async def _health(nc: Client, svc: ServiceContract) -> tuple[bool, object]:
    try:
        reply = await nc.request(svc.health.name, _EMPTY, timeout=1.0)
    except Exception as exc:  # any failure to answer is "not ready", named in the body
        return False, {"ok": False, "error": type(exc).__name__}
    answer = msgspec.json.decode(reply.data)
    ok = PROBLEM_HEADER not in (reply.headers or {}) and answer.get("ok") is True
    return ok, answer


def _nats(settings: GatewaySettings) -> CleanupContext:
    async def context(app: web.Application) -> AsyncIterator[None]:
        app[NATS] = await bus.connect(
            settings.nats_url,
            user=settings.nats_user or GATEWAY,
            password=settings.nats_password,
            name=GATEWAY,
        )
        yield
        await app[NATS].drain()

    return context


async def _redis(app: web.Application) -> AsyncIterator[None]:
    yield
    await app[REDIS].aclose()
