"""From an HTTP request to a bus request and back: token, rate limit, idempotency, the
request checked against its type, the subject asked, the reply or problem returned."""

import asyncio
import codecs
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from functools import cache
from itertools import accumulate
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin
from urllib.parse import quote

import msgspec
from aiohttp import web
from nats.aio.client import Client
from nats.errors import MaxPayloadError, NoRespondersError

from libs.contracts import codec
from libs.contracts.principal import Principal
from libs.contracts.problem import PROBLEM_HEADER, Problem, Refused
from libs.contracts.registry import Subject
from libs.runtime import bus
from libs.runtime.calls import headers_of
from services.gateway.limits import IdempotencyKeys, Late, RateLimiter, Stored, admit
from services.gateway.middlewares import QUOTA
from services.gateway.org_agents import standing
from services.gateway.routes import LOCATED, Route
from services.gateway.tokens import is_delegate, principal_from

__all__ = [
    "IDENTITY_FIELDS",
    "KEYED",
    "NATS",
    "answered_once",
    "ask",
    "caller",
    "counted",
    "forwarding",
    "on_bus",
    "refuse_unclear",
    "request_of",
    "scoped_key",
]

NATS = web.AppKey("nats", Client)

# The token says who is asking; a body that tries to say it is refused by name.
IDENTITY_FIELDS = frozenset(
    {"org", "sub", "roles", "act", "principal", "author", "author_kind", "sender", "on_behalf_of"}
)
MAX_DEPTH = 64
_JSON = "application/json"
_PROBLEM = "application/problem+json"
# The methods an Idempotency-Key makes run once: what is answered otherwise when sent again.
KEYED = ("POST", "DELETE")
# An integer in a path or a query: ASCII digits, a sign at most, and no more than 2^53 has.
_INTEGER = re.compile(r"-?[0-9]{1,16}")
_decode = codec.decoder().decode
_problem = codec.decoder(Problem).decode


def forwarding(
    route: Route,
    *,
    key: str,
    limiter: RateLimiter,
    keys: IdempotencyKeys,
    timeout: float,
    late_timeout: float,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of one route of the table. A keyed POST or DELETE (a DELETE too is
    answered otherwise when sent again: what it removed is gone) whose service is slow
    gets its 504 after `timeout`, and its key the reply that comes within `late_timeout`."""

    async def handler(http: web.Request) -> web.Response:
        principal = await caller(route, http, key=key, limiter=limiter)

        idempotency_key = http.headers.get("Idempotency-Key")
        keyed = route.method in KEYED and idempotency_key is not None

        async def answer(wait: float) -> Stored:
            payload = await request_of(route, http)
            problem, body = await ask(
                http.app[NATS], route.subject, payload, principal, timeout=wait,
                key=scoped_key(principal, idempotency_key) if keyed else None,
            )  # fmt: skip
            if problem is not None:
                return Stored("", problem, body, _PROBLEM)
            if route.accepted is not None and _decode(body).get(route.accepted) is not None:
                return Stored("", 202, body, _JSON)
            return Stored("", route.status, body, _JSON)

        if not keyed:
            result, replayed = await answer(timeout), False
        else:
            fingerprint = keys.fingerprint(route.method, http.path_qs, await http.read())
            result, replayed = await answered_once(
                keys, principal, idempotency_key, fingerprint, answer,
                subject=route.subject, timeout=timeout, late_timeout=late_timeout,
            )  # fmt: skip
        response = web.Response(
            body=None if result.status == 204 else result.body, status=result.status
        )
        if result.status != 204:
            response.headers["Content-Type"] = result.content_type
        if result.status == 429 and (after := _problem(result.body).retry_after) is not None:
            response.headers["Retry-After"] = str(after)  # a service's limit says when
        if replayed:
            response.headers["Idempotent-Replayed"] = "true"
        if route.location and result.status in (201, 202):
            if (where := _located(route.location, _decode(result.body))) is not None:
                response.headers["Location"] = where
        return response

    return handler


def _located(template: str, reply: dict[str, Any]) -> str | None:
    """`template` with each `{name}` (`{draft.id}`: a field's field) the reply's, quoted as
    a path's segment; None if one is not set."""

    def value(name: re.Match[str]) -> str:
        found: Any = reply
        for field in name[1].split("."):
            found = found.get(field) if isinstance(found, dict) else None
        if found is None:
            raise LookupError(name[1])
        return quote(str(found), safe="")

    try:
        return LOCATED.sub(value, template)
    except LookupError:
        return None


async def answered_once(
    keys: IdempotencyKeys,
    principal: Principal,
    idempotency_key: str,
    fingerprint: str,
    answer: Callable[[float], Awaitable[Stored]],
    *,
    subject: Subject,
    timeout: float,
    late_timeout: float,
) -> tuple[Stored, bool]:
    """A keyed request's answer, and whether it replays an earlier one: `answer(wait)` asks
    the service. One slow to answer is a 504 after `timeout`, its key held in flight for the
    reply that comes within `late_timeout`."""

    async def answer_or_late() -> Stored:
        reply = asyncio.ensure_future(answer(late_timeout))
        try:
            return await asyncio.wait_for(asyncio.shield(reply), timeout)
        except TimeoutError:
            timed_out = Refused("service-timeout", 504, f"{subject.name} did not answer in time")
            raise Late(Stored("", 504, codec.encode(timed_out.problem), _PROBLEM), reply) from None

    return await keys.once(principal, idempotency_key, fingerprint, answer_or_late)


async def counted(http: web.Request, limiter: RateLimiter, principal: Principal) -> None:
    """The request counted against its caller's rate, what that leaves them kept for its
    answer's headers (`middlewares.headed`); refused 429 over it."""
    http[QUOTA] = quota = await limiter.count(principal)
    admit(quota)


async def caller(route: Route, http: web.Request, *, key: str, limiter: RateLimiter) -> Principal:
    """Who asks, from the verified token; refused before anything is forwarded if their
    token does not admit them here, they are over their rate, or the query names a parameter
    the route does not take, or one twice (either would otherwise be ignored, silently)."""
    authorization = http.headers.get("Authorization")
    principal = principal_from(authorization, key)
    # Counted before an org agent's standing is read: a removed one's token, sent on and
    # on, costs a bus read each only up to its rate.
    await counted(http, limiter, principal)
    await standing(http.app[NATS], principal, authorization, key)
    if is_delegate(principal) and not route.delegates:
        raise Refused(
            "delegate-not-admitted",
            403,
            f"{principal.act} acts only on the grants of {principal.sub}'s that name it",
        )
    taken = (*route.query, *(("after",) if route.kind == "stream" else ()))
    if unknown := sorted(set(http.query) - set(taken)):
        raise Refused(
            "unknown-query-parameter",
            422,
            f"{route.method} {route.path} takes no query parameter {', '.join(unknown)}",
            errors=tuple(unknown),
        )
    if repeated := sorted({q for q in http.query if len(http.query.getall(q)) > 1}):
        raise Refused(
            "repeated-query-parameter",
            422,
            f"{route.method} {route.path} takes each query parameter once: "
            f"{', '.join(repeated)} came more than once",
            errors=tuple(repeated),
        )
    if not route.has_body and not _no_content(await http.read()):
        raise Refused(
            "body-not-taken",
            422,
            f"{route.method} {route.path} takes no body: what it names is in the path"
            + (f" or the query ({', '.join(route.query)})" if route.query else ""),
        )
    return principal


def _no_content(raw: bytes) -> bool:
    """Nothing, or an empty JSON object (what some clients send with every request)."""
    try:
        return not raw.strip() or _decode(raw) == {}
    except msgspec.DecodeError:
        return False


async def request_of(route: Route, http: web.Request) -> bytes:
    """The route's request as JSON bytes, checked against its type before any service sees it."""
    fields: dict[str, Any] = {}
    if route.has_body:
        if http.content_type != _JSON:
            raise Refused("unsupported-media-type", 415, f"send {_JSON}, not {http.content_type!r}")
        raw = await http.read() or b"{}"
        refuse_unclear(raw)
        if not route.path_params and not route.query:
            # The body is the whole request: once its type accepts it, forward it as sent.
            # A refused body goes the long way below, to say exactly what was wrong.
            try:
                _typed(route.subject.request).decode(raw)
                return raw
            except msgspec.DecodeError:
                pass
        try:
            fields = _decode(raw)
        except msgspec.DecodeError as exc:
            raise Refused("malformed-json", 400, f"the body is not JSON: {_why(raw, exc)}") from exc
        if not isinstance(fields, dict):
            raise Refused("invalid-request", 422, "the body must be a JSON object")
        if named := sorted(IDENTITY_FIELDS & fields.keys()):
            raise Refused(
                "identity-in-body", 422, f"{named} come from your token; a body may not name them"
            )
    for name in route.path_params:
        if name in fields:
            raise Refused("invalid-request", 422, f"{name!r} is in the path; not in the body")
        fields[name] = _scalar(route, name, http.match_info[name], "path")
    for name in route.query:
        if name in http.query:
            fields[name] = _scalar(route, name, http.query[name], "query")
    try:
        request = msgspec.convert(fields, route.subject.request)
    except msgspec.ValidationError as exc:
        raise Refused("invalid-request", 422, codec.explained(exc)) from exc
    return codec.encode(request)


def refuse_unclear(raw: bytes) -> None:
    """What no decoder is handed: JSON nested past MAX_DEPTH, then a name given twice in one
    object (read only once the depth is known to be safe to recurse into)."""
    _refuse_deep(raw)
    _refuse_repeated(raw)


def _refuse_repeated(raw: bytes) -> None:
    """A name given twice in one object is refused, naming it: which of the two counts is
    each reader's guess (RFC 8259 §4), and a reader before us that took the other one (a
    proxy, a reviewer, the client's own log) saw another request than the one carried out."""
    try:
        json.loads(raw, object_pairs_hook=_named_once)
    except ValueError:  # not JSON: its decoder says what is wrong
        pass


def _named_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    named = dict(pairs)
    if len(named) < len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise Refused(
                    "duplicate-key", 422, f"{name!r} is named twice in one object; name it once"
                )
            seen.add(name)
    return named


def _why(raw: bytes, exc: msgspec.DecodeError) -> str:
    """What is wrong with a body msgspec refused. A `\\u` escape of half a surrogate pair
    (`"\\ud800"`), which Python's reader takes, is said as what it is, where msgspec says
    "Input data was truncated" of a body that is whole; so is a byte-order mark, where
    msgspec says "invalid character (byte 0)". Read only once refused."""
    if raw.startswith(codecs.BOM_UTF8):
        return "it starts with a byte-order mark; send UTF-8 without one (RFC 8259 §8.1)"
    try:
        json.dumps(json.loads(raw), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return "a \\u escape names half of a UTF-16 surrogate pair, which is no character"
    except ValueError:
        pass
    return str(exc)


def _refuse_deep(raw: bytes) -> None:
    """JSON nested past MAX_DEPTH is refused before any decoder recurses into it: its
    brackets outside strings are counted, never by decoding and walking it."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return
    if max(accumulate(map(_STEP.__getitem__, _outside_strings(raw))), default=0) > MAX_DEPTH:
        raise Refused("nesting-too-deep", 422, f"the body nests deeper than {MAX_DEPTH} levels")


def _outside_strings(raw: bytes) -> bytes:
    """The brackets of `raw` that are not inside a string. Once escaped backslashes and
    quotes are gone, every quote left opens or closes a string, so the brackets outside
    are the even pieces between quotes."""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(unescaped.translate(None, _NOT_QUOTE_OR_BRACKET).split(b'"')[::2])


_NOT_QUOTE_OR_BRACKET = bytes(b for b in range(256) if b not in b'"[]{}')
_STEP = [(b in b"[{") - (b in b"]}") for b in range(256)]


def scoped_key(principal: Principal, idempotency_key: str) -> str:
    """The key a service stores a keyed request's effect under: the client's key, scoped to
    who sent it, so two callers' keys never meet."""
    scoped = f"{principal.org}\n{principal.sub}\n{principal.act or ''}\n{idempotency_key}"
    return hashlib.sha256(scoped.encode()).hexdigest()[:32]


@cache
def _typed(request: type) -> msgspec.json.Decoder:
    return codec.decoder(request)


def _scalar(route: Route, name: str, raw: str, where: str) -> Any:
    """Path and query values are strings on the wire; an integer field's is parsed, as
    written in ASCII digits alone (`int` would also take "1_0", " 5" and an Arabic-Indic five)."""
    if name not in _integers(route.subject.request):
        return raw
    if not _INTEGER.fullmatch(raw):
        raise Refused(
            "invalid-request", 422, f"{where} {name!r} must be an integer of 1 to 16 digits"
        )
    return int(raw)


@cache
def _integers(request: type) -> frozenset[str]:
    def is_int(t: Any) -> bool:
        if get_origin(t) is Annotated:
            return is_int(get_args(t)[0])
        if isinstance(t, UnionType) or get_origin(t) is Union:
            return any(is_int(a) for a in get_args(t))
        return t is int

    return frozenset(f.name for f in msgspec.structs.fields(request) if is_int(f.type))


def on_bus(http: web.Request) -> Client:
    """The gateway's connection, refused while it is not up: what subscribes on it before
    its first connect would never be heard, and a watch begun off the bus would only wait
    for its time to run out."""
    nc = http.app[NATS]
    if not nc.is_connected:
        raise _off_bus()
    return nc


def _off_bus() -> Refused:
    return Refused("bus-unavailable", 503, "the gateway is not connected to the bus; ask again")


async def ask(
    nc: Client,
    subject: Subject,
    payload: bytes,
    principal: Principal | None,
    *,
    timeout: float,
    key: str | None = None,
) -> tuple[int | None, bytes]:
    """Request `subject`; (problem status or None, reply body). One not sent, the gateway
    being off the bus, is a 503 that asking again runs once."""
    try:
        headers = headers_of(principal, key, timeout=timeout)
        reply = await nc.request(subject.name, payload, timeout=timeout, headers=headers)
    except bus.NotSent as exc:
        raise _off_bus() from exc
    except NoRespondersError as exc:
        raise Refused("service-unavailable", 503, f"no replica serves {subject.name}") from exc
    except MaxPayloadError as exc:  # a webhook's raw body, escaped into its request, can grow
        raise Refused(
            "body-too-large",
            413,
            f"the request is {len(payload):,} bytes on the bus, more than the "
            f"{nc.max_payload:,} it carries",
        ) from exc
    except TimeoutError as exc:  # nats-py's TimeoutError is one too
        raise Refused("service-timeout", 504, f"{subject.name} did not answer in time") from exc
    status = (reply.headers or {}).get(PROBLEM_HEADER)
    return (int(status) if status else None), reply.data
