"""The one middleware: every request is named (X-Request-Id) and counted, and every refusal
leaves as a problem document; and the headers every answer carries, set as it is sent."""

import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web
from prometheus_client import Counter, Histogram

from libs.contracts.problem import Problem, Refused
from libs.runtime import logs
from libs.runtime.metrics import child
from services.gateway.limits import WINDOW_S, Quota

__all__ = ["QUOTA", "RATE_POLICY", "REQUEST_ID", "headed", "problem_response", "problems"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
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
_RETRY_AFTER_503 = "1"
# A client's own X-Request-Id is taken when it is a plain token; otherwise one is made.
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_RULES = {404: "not-found", 405: "method-not-allowed", 413: "body-too-large"}
REALM = "tether"
# What the caller's rate leaves them on this request, said on its answer (`headed`).
QUOTA = web.RequestKey("quota", Quota | None)
RATE_POLICY = "per-caller"


def problem_response(problem: Problem) -> web.Response:
    response = web.Response(
        body=msgspec.json.encode(problem),
        status=problem.status,
        content_type="application/problem+json",
    )
    if problem.retry_after is not None:
        response.headers["Retry-After"] = str(problem.retry_after)
    return response


@web.middleware
async def problems(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every refusal leaves as a problem document with the status its rule names."""
    started = time.perf_counter()
    given = request.headers.get("X-Request-Id", "")
    logs.REQUEST.set(given if REQUEST_ID.fullmatch(given) else secrets.token_hex(8))
    try:
        response = await handler(request)
    except Refused as exc:
        response = problem_response(exc.problem)
    except web.HTTPException as exc:
        rule = _RULES.get(exc.status)
        response = problem_response(
            Problem(
                type=f"urn:tether:problem:{rule or 'http-error'}",
                title=rule.replace("-", " ") if rule else exc.reason,  # as every rule's
                status=exc.status,
                detail=_detail(exc, request),
            )
        )
        if isinstance(exc, web.HTTPMethodNotAllowed):  # RFC 9110: say what it does take
            response.headers["Allow"] = ", ".join(sorted(exc.allowed_methods))
    except Exception:
        incident = logs.REQUEST.get()  # in the answer and the log line, to find one by the other
        _log.exception("request failed", extra={"path": request.path})
        why = f"the gateway logged why as incident {incident}"
        response = problem_response(Refused("internal", 500, why).problem)
    route = request.match_info.route.resource
    name = route.canonical if route is not None else "unmatched"
    seconds = time.perf_counter() - started
    child(HTTP_REQUESTS, request.method, name, response.status).inc()
    child(HTTP_SECONDS, request.method, name).observe(seconds)
    if _log.isEnabledFor(logging.DEBUG):  # an operator finding one request by its id
        answered = {"method": request.method, "route": name, "status": response.status}
        _log.debug("answered", extra={**answered, "seconds": round(seconds, 6)})
    return response


def _challenge(request: web.Request) -> str:
    """RFC 6750 §3's Bearer challenge: `invalid_token` to a request that sent credentials
    (expired, forged, revoked, malformed), and no error code to one that sent none."""
    if "Authorization" in request.headers:
        return f'Bearer realm="{REALM}", error="invalid_token"'
    return f'Bearer realm="{REALM}"'


def _detail(exc: web.HTTPException, request: web.Request) -> str:
    """What was wrong, named: the route, the method, the size."""
    if isinstance(exc, web.HTTPNotFound):
        return f"no route {request.method} {request.path}"
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        return f"{request.path} takes {allowed}, not {request.method}"
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        return "the body is over 1 MiB"
    return exc.reason


async def headed(request: web.Request, response: web.StreamResponse) -> None:
    """Every answer's headers, set as it is sent, a stream's too (its headers go before its
    first event, long before the handler returns). It says which request it answers: the
    id its log lines, and every service's for it, name. It names the server, not the Python
    and aiohttp versions behind it (aiohttp's own `Server`), which tell a scanner what to
    try. Being one caller's (their rooms, lines, grants), it is kept by no cache, a
    browser's or a proxy's, and read as the type it says it is."""
    headers = response.headers
    headers["Server"] = "tether"
    if (request_id := logs.REQUEST.get()) is not None:
        headers["X-Request-Id"] = request_id
    headers.setdefault("Cache-Control", "no-store")
    headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.status == 503:
        # Transient (the bus, the store, a service away or electing a leader): ask again
        # soon. A client's retry that honours the header waits no longer than it must.
        headers.setdefault("Retry-After", _RETRY_AFTER_503)
    if response.status == 401:  # RFC 9110 §15.5.2: a 401 names the scheme it takes
        headers["WWW-Authenticate"] = _challenge(request)
    if (quota := request.get(QUOTA)) is not None:
        # What the caller's rate leaves them, so a client paces itself before a 429
        # (draft-ietf-httpapi-ratelimit-headers: the policy, then what is left of it).
        headers["RateLimit-Policy"] = f'"{RATE_POLICY}";q={quota.limit};w={WINDOW_S}'
        headers["RateLimit"] = f'"{RATE_POLICY}";r={quota.remaining};t={quota.reset_s}'
