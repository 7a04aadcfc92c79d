"""One service asking another: the request encoded, the reply decoded, a refusal raised
as the same Refused, so it reaches the original caller with its own rule and status."""

from functools import cache
from typing import TypeVar

import msgspec
from nats.aio.client import Client

from libs.contracts import codec
from libs.contracts.principal import PRINCIPAL_HEADER, Principal
from libs.contracts.problem import PROBLEM_HEADER, Problem, Refused
from libs.contracts.registry import Subject

__all__ = ["call"]

T = TypeVar("T")
_problem = codec.decoder(Problem)


async def call(
    nc: Client,
    subject: Subject,
    request: msgspec.Struct,
    *,
    caller: str,
    principal: Principal | None = None,
    timeout: float = 10.0,
) -> T:  # type: ignore[type-var]
    """`subject`'s reply to `request`. A by-caller subject is asked as `caller`; any other
    carries `principal`, which only services and the gateway may set."""
    headers = {PRINCIPAL_HEADER: codec.encode(principal).decode()} if principal else None
    reply = await nc.request(
        subject.published_by(caller), codec.encode(request), timeout=timeout, headers=headers
    )
    if (reply.headers or {}).get(PROBLEM_HEADER):
        problem = _problem.decode(reply.data)
        raise Refused(problem.rule, problem.status, problem.detail, errors=problem.errors)
    return _decoder(subject.reply).decode(reply.data)


@cache
def _decoder(type_: type) -> msgspec.json.Decoder:
    return codec.decoder(type_)
