"""Carriers' webhooks: no token, forwarded as they arrived (URL, signature header, raw
body) to the service that holds the line's secret and verifies them."""

from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web

from libs.contracts import codec
from libs.contracts.problem import Refused
from libs.contracts.rooms import Inbound
from services.gateway.forward import NATS, ask
from services.gateway.routes import Route

__all__ = ["webhook"]

# Where each carrier puts its signature (Mailgun signs inside the form body).
SIGNATURE_HEADERS = {
    "sms": "X-Twilio-Signature",
    "voice": "X-Twilio-Signature",
    "whatsapp": "X-Hub-Signature-256",
}


def webhook(
    route: Route, *, public_url: str, timeout: float
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(http: web.Request) -> web.Response:
        transport = http.match_info["transport"]
        base = public_url.rstrip("/") if public_url else f"{http.scheme}://{http.host}"
        try:
            body = (await http.read()).decode()
        except UnicodeDecodeError as exc:
            raise Refused("invalid-request", 422, f"the body is not UTF-8: {exc}") from exc
        fields = {
            "transport": transport,
            "url": base + http.path_qs,
            "signature": http.headers.get(SIGNATURE_HEADERS.get(transport, ""), ""),
            "content_type": http.content_type,
            "body": body,
        }
        try:
            inbound = msgspec.convert(fields, Inbound)
        except msgspec.ValidationError as exc:
            raise Refused("invalid-request", 422, str(exc)) from exc
        problem, body = await ask(
            http.app[NATS], route.subject, codec.encode(inbound), None, timeout=timeout
        )
        if problem:
            return web.Response(body=body, status=problem, content_type="application/problem+json")
        if route.twiml:
            return web.Response(text=_twiml(body), content_type="text/xml")
        return web.Response(body=body, status=200, content_type="application/json")

    return handler


def _twiml(reply: bytes) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>' + msgspec.json.decode(reply)["twiml"]
