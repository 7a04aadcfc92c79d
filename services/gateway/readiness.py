"""/readyz: every service answers its health subject over the bus."""

import asyncio
from collections.abc import Sequence

import msgspec
from nats.aio.client import Client

from libs.contracts import codec
from libs.contracts.health import Health, HealthRequest
from libs.contracts.problem import PROBLEM_HEADER
from libs.contracts.registry import ServiceContract

__all__ = ["readiness"]

_ASK = codec.encode(HealthRequest())
_decode = msgspec.json.Decoder(Health).decode


async def readiness(nc: Client, services: Sequence[ServiceContract]) -> tuple[bool, bytes]:
    """(ready, the JSON body naming each service's answer)."""
    if len(services) == 1:
        # gather makes a task per service; for one service that task was a tenth of the
        # request's time and most of its tail latency (BENCHMARKS.md).
        answers = [await _health(nc, services[0])]
    else:
        answers = await asyncio.gather(*(_health(nc, s) for s in services))
    ready = nc.is_connected and all(ok for ok, _ in answers)
    named = {s.name: answer for s, (_, answer) in zip(services, answers, strict=True)}
    return ready, codec.encode({"ready": ready, "services": named})


async def _health(nc: Client, svc: ServiceContract) -> tuple[bool, object]:
    try:
        reply = await nc.request(svc.health.name, _ASK, timeout=1.0)
        if PROBLEM_HEADER in (reply.headers or {}):
            return False, msgspec.Raw(reply.data)
        health = _decode(reply.data)
    except Exception as exc:  # any failure to answer is "not ready", named in the body
        return False, {"ok": False, "error": type(exc).__name__}
    return health.ok, msgspec.Raw(reply.data)
