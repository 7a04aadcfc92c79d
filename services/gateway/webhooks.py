"""Carriers' webhooks: no token, forwarded as they arrived (URL, signature header, raw
body) to the service that holds the line's secret and verifies them.

A multipart body (Mailgun's, for an email with attachments) is forwarded as the form of its
fields: each file is read through, not kept, and named by its field with its filename, type
and size, so the message says what came with it. No carrier signs such a body's bytes
(Mailgun signs its timestamp and token), so its form verifies as the body would.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from urllib.parse import urlencode, urlsplit

import msgspec
from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from libs.contracts import codec
from libs.contracts.problem import Problem, Refused
from libs.contracts.rooms import Inbound
from services.gateway.forward import NATS, ask
from services.gateway.middlewares import problem_response
from services.gateway.routes import Route

__all__ = ["webhook"]

_XML = '<?xml version="1.0" encoding="UTF-8"?>'
# Mailgun takes a message of at most 25 MB; what an unsigned caller may make us read through.
FILES_MOST = 32 * 1024 * 1024
# Twilio asks each webhook once: an answer of 5xx loses a text or a status (its error
# 11200), or says an application error to a caller and loses their voicemail; it asks
# again only when it could not connect. Meta and Mailgun ask again for days and hours.
# Twilio waits 15 s for an answer; a transient failure behind the gateway is asked again
# for 10 s of it, which leaves a call's agent its 3 s to speak.
_ASKS_ONCE = frozenset({"sms", "voice"})
CARRIER_WAITS_S = 10.0
_TRANSIENT = frozenset({502, 503, 504})
# Mailgun asks again for 8 hours after any answer but a 200 and a 406. A refusal that asking
# again cannot change (a bad signature, a line gone, a body it cannot take) is answered 406,
# its problem as it was; a 408 or a 429 may pass, so those stay as they are.
_STOPS_ON_406 = frozenset({"email"})
_MAY_PASS = frozenset({408, 429})
_problem = codec.decoder(Problem).decode
# Where each carrier puts its signature (Mailgun signs inside the form body).
SIGNATURE_HEADERS = {
    "sms": "X-Twilio-Signature",
    "voice": "X-Twilio-Signature",
    "whatsapp": "X-Hub-Signature-256",
}


def webhook(
    route: Route, *, public_url: str, timeout: float, most: int
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """`most`: the bytes a body may hold, and a multipart body's fields together."""

    async def handler(http: web.Request) -> web.Response:
        transport = http.match_info["transport"]
        try:
            return await answer(http, transport)
        except Refused as exc:
            return _refused(transport, exc.problem)

    async def answer(http: web.Request, transport: str) -> web.Response:
        base = public_url.rstrip("/") if public_url else f"{http.scheme}://{http.host}"
        content_type = http.content_type
        try:
            if content_type == "multipart/form-data":
                body, content_type = await _form(http, most), "application/x-www-form-urlencoded"
            else:
                body = (await http.read()).decode()
        except web.HTTPRequestEntityTooLarge as exc:
            why = f"a webhook's body is at most {most:,} bytes"
            raise Refused("body-too-large", 413, why) from exc
        except UnicodeDecodeError as exc:
            raise Refused("invalid-request", 422, f"the body is not UTF-8: {exc}") from exc
        except (ValueError, LookupError, HttpProcessingError) as exc:
            raise Refused("invalid-request", 422, f"not a multipart body: {exc}") from exc
        fields = {
            "transport": transport,
            "url": _url(base + http.path_qs),
            "signature": http.headers.get(SIGNATURE_HEADERS.get(transport, ""), ""),
            "content_type": content_type,
            "body": body,
        }
        try:
            inbound = msgspec.convert(fields, Inbound)
        except msgspec.ValidationError as exc:
            raise Refused("invalid-request", 422, str(exc)) from exc
        asking = partial(ask, http.app[NATS], route.subject, codec.encode(inbound), None)
        if transport in _ASKS_ONCE:
            problem, body = await _until_answered(asking, timeout=timeout)
        else:
            problem, body = await asking(timeout=timeout)
        if problem:
            return _refused(transport, _problem(body))
        if route.twiml:
            return web.Response(text=_twiml(body), content_type="text/xml")
        if transport in route.acknowledged_in_twiml and not _asks_json(http):
            return web.Response(text=_XML + "<Response/>", content_type="text/xml")
        if route.handshake:
            return web.Response(text=msgspec.json.decode(body)["challenge"])
        return web.Response(body=body, status=200, content_type="application/json")

    return handler


def _refused(transport: str, problem: Problem) -> web.Response:
    """The carrier's answer to a refusal: one Mailgun would ask again for hours, told
    apart from one worth asking again."""
    final = 400 <= problem.status < 500 and problem.status not in _MAY_PASS
    if transport in _STOPS_ON_406 and final:
        problem = msgspec.structs.replace(problem, status=406)
    return problem_response(problem)


async def _until_answered(
    asking: Callable[..., Awaitable[tuple[int | None, bytes]]], *, timeout: float
) -> tuple[int | None, bytes]:
    """The service's answer, asked again through a transient failure (a replica restarting,
    a leader elected) for as long as the carrier waits. The service takes a webhook asked
    twice once: a message by its carrier's id, a status only forward."""
    deadline = time.monotonic() + CARRIER_WAITS_S
    pause = 0.25
    while True:
        left = deadline - time.monotonic()
        try:
            problem, body = await asking(timeout=max(0.1, min(timeout, left)))
        except Refused as exc:
            if exc.problem.status not in _TRANSIENT or left < pause:
                raise
        else:
            if problem not in _TRANSIENT or left < pause:
                return problem, body
        await asyncio.sleep(pause)
        pause = min(2 * pause, 2.0)


async def _form(http: web.Request, most: int) -> str:
    """A multipart body as the form of its fields, each file named rather than kept. The
    form is at most `most` bytes, as a body is; the files are read through up to
    FILES_MOST."""
    fields: list[tuple[str, str]] = []
    kept = read = 0
    reader = await http.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name is None:
            raise Refused("invalid-request", 422, "a multipart body holds named fields only")
        if part.filename is None:
            value = await part.read(decode=True)  # at most `most` bytes, as aiohttp reads
            if (kept := kept + len(value)) > most:
                raise _too_large("fields", most)
            fields.append((part.name, value.decode(part.get_charset("utf-8"))))
            continue
        size = 0
        while chunk := await part.read_chunk():
            size += len(chunk)
            if (read := read + len(chunk)) > FILES_MOST:
                raise _too_large("files", FILES_MOST)
        kind = part.headers.get("Content-Type", "application/octet-stream")
        fields.append((part.name, f"{part.filename} ({kind}, {size:,} bytes)"))
    if len(form := urlencode(fields)) > most:
        raise _too_large("fields", most)
    return form


def _url(url: str) -> str:
    """The URL the carrier signed, as the Host header makes it: refused where it makes
    none (a port no URL holds, an unclosed IPv6 bracket), which the rooms would read."""
    try:
        urlsplit(url).port  # noqa: B018 - read for the ValueError it raises
    except ValueError as exc:
        raise Refused("invalid-request", 400, f"the Host header makes no URL: {exc}") from exc
    return url


def _too_large(what: str, most: int) -> Refused:
    return Refused("body-too-large", 413, f"a webhook's {what} are at most {most:,} bytes")


def _twiml(reply: bytes) -> str:
    return _XML + msgspec.json.decode(reply)["twiml"]


def _asks_json(http: web.Request) -> bool:
    """Whether the caller asks for the JSON reply (where the message was stored). Twilio
    runs what an inbound text's webhook answers as TwiML, and logs any other answer as its
    error 12300."""
    return "application/json" in http.headers.get("Accept", "")
