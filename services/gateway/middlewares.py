"""Problems to statuses, tokens to principals, rate limits and idempotent replays."""

import logging
import time
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web
from prometheus_client import Counter, Histogram

from libs.contracts.principal import Principal
from libs.contracts.problem import Problem, Refused
from services.gateway.limits import IdempotencyKeys, RateLimiter, Stored
from services.gateway.tokens import principal_from

__all__ = ["PRINCIPAL", "authenticate", "idempotent", "problem_response", "problems"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PRINCIPAL = web.RequestKey("principal", Principal)
_OPEN = frozenset({"/healthz", "/readyz", "/metrics", "/v1/openapi.json"})
_log = logging.getLogger(__name__)

HTTP_REQUESTS = Counter(
    "tether_http_requests", "HTTP requests, by route and status.", ["method", "route", "status"]
)
HTTP_SECONDS = Histogram(
    "tether_http_request_seconds",
    "HTTP request time in the gateway.",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
_STATUS_RULES = {
    404: ("not-found", "no such route"),
    405: ("method-not-allowed", "this route does not take that method"),
    413: ("body-too-large", "the body is over 1 MiB"),
}


def problem_response(problem: Problem) -> web.Response:
    return web.Response(
        body=msgspec.json.encode(problem),
        status=problem.status,
        content_type="application/problem+json",
    )


@web.middleware
async def problems(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every refusal leaves as a problem document with the status its rule names."""
    started = time.perf_counter()
    try:
        response = await handler(request)
    except Refused as exc:
        response = problem_response(exc.problem)
    except web.HTTPException as exc:
        rule, detail = _STATUS_RULES.get(exc.status, ("http-error", exc.reason))
        response = problem_response(
            Problem(
                type=f"urn:tether:problem:{rule}",
                title=exc.reason,
                status=exc.status,
                detail=detail,
            )
        )
    except Exception:
        _log.exception("request failed", extra={"path": request.path})
        response = problem_response(Refused("internal", 500, "the gateway logged why").problem)
    route = request.match_info.route.resource
    name = route.canonical if route is not None else "unmatched"
    HTTP_REQUESTS.labels(request.method, name, response.status).inc()
    HTTP_SECONDS.labels(request.method, name).observe(time.perf_counter() - started)
    return response


def authenticate(key: str, limiter: RateLimiter) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Every /v1 route but the OpenAPI document needs a verified bearer token."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in _OPEN or request.match_info.http_exception is not None:
            return await handler(request)
        principal = principal_from(request.headers.get("Authorization"), key)
        await limiter.check(principal)
        request[PRINCIPAL] = principal
        return await handler(request)

    return middleware


def idempotent(keys: IdempotencyKeys) -> Callable[..., Awaitable[web.StreamResponse]]:
    """A POST with an Idempotency-Key runs once; its retries get the first answer back."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        key = request.headers.get("Idempotency-Key")
        if request.method != "POST" or key is None or PRINCIPAL not in request:
            return await handler(request)
        principal: Principal = request[PRINCIPAL]
        fingerprint = keys.fingerprint(request.method, request.path_qs, await request.read())
        if (earlier := await keys.claim(principal, key, fingerprint)) is not None:
            return web.Response(
                body=earlier.body,
                status=earlier.status,
                headers={"Content-Type": earlier.content_type, "Idempotent-Replayed": "true"},
            )
        try:
            response = await handler(request)
        except Refused as exc:
            response = problem_response(exc.problem)
        body = response.body if isinstance(response, web.Response) else b""
        await keys.settle(
            principal,
            key,
            Stored(fingerprint, response.status, bytes(body or b""), response.content_type),
        )
        return response

    return middleware
