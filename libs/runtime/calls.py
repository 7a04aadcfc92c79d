"""One service asking another: the request encoded, the reply decoded, a refusal (4xx)
raised as the same Refused, so it reaches the original caller with its own rule and status,
and a transient failure (a 5xx problem, a timeout, no responders, not connected) raised as
Unavailable, so a reader retries it instead of dropping it."""

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TypeVar

import msgspec
from nats.aio.client import Client
from nats.errors import NoRespondersError

from libs.contracts import codec
from libs.contracts.principal import (
    BEFORE_HEADER,
    PRINCIPAL_HEADER,
    REQUEST_KEY_HEADER,
    Principal,
)
from libs.contracts.problem import PROBLEM_HEADER, Problem, Refused, Unavailable
from libs.contracts.registry import Subject
from libs.runtime import bus, logs

__all__ = ["call", "headers_of"]

T = TypeVar("T")
_problem = codec.decoder(Problem)
# Of a call's wait, the part its callee has to act in; the rest is for the answer to come
# back. Past it the callee does nothing (`Tether-Before`): no one would be told it did.
_ACT_WITHIN = 0.8


async def call(
    nc: Client,
    subject: Subject,
    request: msgspec.Struct,
    *,
    caller: str,
    principal: Principal | None = None,
    key: str | None = None,
    timeout: float = 10.0,
) -> T:  # type: ignore[type-var]
    """`subject`'s reply to `request`. A by-caller subject is asked as `caller`; any other
    carries `principal`, which only services and the gateway may set. With `key` (the keyed
    request this call is made for), the callee runs it once under that key too. The callee
    is told when this call stops waiting, less the time the answer takes back."""
    try:
        reply = await nc.request(
            subject.published_by(caller),
            codec.encode(request),
            timeout=timeout,
            headers=headers_of(principal, key, timeout=timeout),
        )
    except bus.NotSent as exc:
        raise Unavailable(_transient("bus-unavailable", str(exc))) from exc
    except NoRespondersError as exc:
        no_one = f"no replica serves {subject.name}"
        raise Unavailable(_transient("service-unavailable", no_one)) from exc
    except TimeoutError as exc:  # nats-py's TimeoutError is one too
        raise Unavailable(_transient("service-timeout", f"{subject.name} did not answer")) from exc
    if (reply.headers or {}).get(PROBLEM_HEADER):
        problem = _problem.decode(reply.data)
        if problem.status >= 500:
            raise Unavailable(problem)
        raise Refused(problem.rule, problem.status, problem.detail, errors=problem.errors)
    return _decoder(subject.reply).decode(reply.data)


def headers_of(principal: Principal | None, key: str | None, *, timeout: float) -> dict[str, str]:
    """What a request carries besides its body: who it is for, the key it runs once under,
    when its caller, waiting `timeout` seconds from now, stops waiting (less the time the
    answer takes back), and the id of the request it is made for."""
    before = datetime.now(UTC) + timedelta(seconds=timeout * _ACT_WITHIN)
    headers = {BEFORE_HEADER: before.isoformat()}
    if principal is not None:
        headers[PRINCIPAL_HEADER] = codec.encode(principal).decode()
    if key is not None:
        headers[REQUEST_KEY_HEADER] = key
    return headers | logs.carried()


@cache
def _decoder(type_: type) -> msgspec.json.Decoder:
    return codec.decoder(type_)


def _transient(rule: str, detail: str) -> Problem:
    return Refused(rule, 503, detail).problem
