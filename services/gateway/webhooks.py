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
SIGNATURE_HEADERS = {"sms": "X-Twilio-Signature", "whatsapp": "X-Hub-Signature-256"}


def webhook(
    route: Route, *, public_url: str, timeout: float
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(http: web.Request) -> web.Response:
        transport = http.match_info["transport"]
        base = public_url.rstrip("/") if public_url else f"{http.scheme}://{http.host}"
        fields = {
            "transport": transport,
            "url": base + http.path_qs,
            "signature": http.headers.get(SIGNATURE_HEADERS.get(transport, ""), ""),
            "content_type": http.content_type,
            "body": await http.text(),
        }
        try:
            inbound = msgspec.convert(fields, Inbound)
        except msgspec.ValidationError as exc:
            raise Refused("invalid-request", 422, str(exc)) from exc
        problem, body = await ask(
            http.app[NATS], route.subject, codec.encode(inbound), None, timeout=timeout
        )
        content_type = "application/problem+json" if problem else "application/json"
        return web.Response(body=body, status=problem or 200, content_type=content_type)

    return handler
