"""Personal lines: addresses, the rooms a line's messages land in, and each carrier's
webhook, read and verified in the style of the carrier it models.

    sms       Twilio: form fields From, To, Body, MessageSid; X-Twilio-Signature is
              base64(HMAC-SHA1(auth token, URL + each field name and value, by name)).
    voice     Twilio Programmable Voice: form fields From, To, CallSid (and, for a
              recording, RecordingUrl and RecordingDuration), signed as its SMS.
    email     Mailgun: form fields sender, recipient, subject, body-plain, Message-Id,
              timestamp, token, signature = hex(HMAC-SHA256(signing key, timestamp+token)),
              refused when the timestamp is more than five minutes from now.
    whatsapp  Meta's Cloud API: a JSON body; X-Hub-Signature-256 is
              sha256=hex(HMAC-SHA256(app secret, raw body)).
"""

import base64
import contextlib
import hashlib
import hmac
import re
from datetime import datetime, timedelta
from email.utils import parseaddr
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import msgspec

from libs.contracts.problem import Refused
from libs.contracts.rooms import Inbound, Member, Message, Room, Transport
from services.rooms.domain.members import personal_agent_id
from services.rooms.domain.threads import Thread, thread_of

__all__ = [
    "Arrival",
    "Opt",
    "answerable",
    "arrival",
    "arrival_id",
    "arrivals",
    "correspondent",
    "correspondent_room",
    "handshake",
    "hub",
    "hub_notice",
    "in_service_window",
    "mailgun_signed",
    "meta_values",
    "normalize",
    "room_id",
    "sign_mailgun",
    "sign_meta",
    "sign_twilio",
    "verify",
    "verify_handshake",
    "verify_token",
]

_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
# A short code (3 to 8 digits), or an alphanumeric sender ID (at most 11 characters).
_UNANSWERABLE = re.compile(r"^([0-9]{3,8}|(?=.*[A-Za-z])[A-Za-z0-9 .&-]{1,11})$")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,190}\.[^@\s]{2,63}$")
MAX_SKEW_S = 300


# A text that is one of these words alone opts its sender out of, or back into, what the
# line sends them (Twilio's default keywords, which it enforces: it sends nothing more to
# a number that opted out); Twilio's Advanced Opt-Out says it as OptOutType.
_OPT_OUT = frozenset(
    {"stop", "stopall", "unsubscribe", "cancel", "end", "quit", "optout", "revoke"}
)
_OPT_IN = frozenset({"start", "yes", "unstop"})
Opt = Literal["out", "in"]


class Arrival(msgspec.Struct, frozen=True):
    """One inbound message: from whom, to which of our addresses, what, and the carrier's
    id for it (a retried webhook carries the same id); `opt` when it opts its sender out
    of what the line sends them, or back in; `automatic` when no person wrote it to be
    answered (an auto-reply, a list's or a bulk mail), which no agent answers."""

    sender: str
    to: str
    text: str
    carrier_id: str
    opt: Opt | None = None
    automatic: bool = False
    thread: Thread | None = None  # an email's: what a reply to it carries on


def normalize(transport: Transport, address: str) -> str:
    address = address.strip()
    if transport == "email":
        address = address.lower()
        if not _EMAIL.match(address):
            raise Refused("invalid-address", 422, f"{address!r} is not an email address")
        return address
    address = address.removeprefix("whatsapp:")
    if not _E164.match(address):
        raise Refused("invalid-address", 422, f"{address!r} is not an E.164 number (+15551234567)")
    return address


def correspondent(transport: Transport, address: str) -> str:
    """Who a webhook says a message came from, as the line's transport writes addresses.
    A text can come from a short code (a bank's, a sign-in code's) or a sender name, which
    are no E.164 number: taken as they are, so the text is not lost, though nothing
    answers them (`answerable`)."""
    if transport == "sms" and _UNANSWERABLE.match(address.strip()):
        return address.strip()
    return normalize(transport, address)


# WhatsApp takes a free-form message only within 24 hours of the correspondent's last
# (Meta's customer service window); past it, only a template, which a person's line has none of.
SERVICE_WINDOW = timedelta(hours=24)


def in_service_window(transport: Transport, heard: datetime | None, now: datetime) -> bool:
    """Whether a message may leave by `transport` now, the correspondent last heard at
    `heard` (None: not since this was kept; the carrier decides)."""
    return transport != "whatsapp" or heard is None or now - heard <= SERVICE_WINDOW


def answerable(transport: Transport, address: str) -> bool:
    """Whether a line can send to the correspondent at `address`."""
    return transport == "email" or bool(_E164.match(address))


def room_id(transport: Transport, org: str, owner: str, correspondent: str | None) -> str:
    """The same line and correspondent always give the same room; None is the line's hub."""
    digest = hashlib.sha256(f"{org}\0{owner}\0{transport}\0{correspondent}".encode())
    return f"{transport}-{digest.hexdigest()[:16]}"


def _own(person: str) -> tuple[Member, ...]:
    return (Member(kind="human", id=person), Member(kind="agent", id=personal_agent_id(person)))


def correspondent_room(
    transport: Transport, org: str, person: str, correspondent: str, now: datetime
) -> Room:
    """The room a line's messages with one correspondent land in: the person, their agent
    and the correspondent, owned by the person."""
    return Room(
        id=room_id(transport, org, person, correspondent),
        org=org,
        scope="personal",
        title=f"{transport} {correspondent}",
        members=(*_own(person), Member(kind="human", id=f"{transport}:{correspondent}")),
        created_at=now,
        owner=person,
        transport=transport,
        correspondent=correspondent,
    )


def hub(transport: Transport, org: str, person: str, address: str, now: datetime) -> Room:
    """The line's own room, where each new conversation is announced to its person."""
    return Room(
        id=room_id(transport, org, person, None),
        org=org,
        scope="personal",
        title=f"{transport} {address}",
        members=_own(person),
        created_at=now,
        owner=person,
        transport=None,
    )


def hub_notice(hub: Room, room: Room, now: datetime) -> Message:
    return Message(
        seq=0,
        room=hub.id,
        at=now,
        author="service:rooms",
        author_kind="bot",
        text=f"New conversation with {room.correspondent}: room {room.id}",
    )


def arrivals(inbound: Inbound) -> list[Arrival]:
    """The messages in a webhook, before its signature is checked (to find whose lines
    they came to, and so whose secrets check it). Meta batches (each entry's changes,
    each change's messages), and sends its status callbacks to the same address, so a
    WhatsApp webhook holds any number, none among them; any other carrier's holds one."""
    if inbound.transport != "whatsapp":
        return [arrival(inbound)]
    try:
        return [
            _meta_arrival(message, value)
            for value in meta_values(inbound.body)
            for message in value.get("messages") or []
        ]
    except (KeyError, TypeError, AttributeError) as exc:
        raise Refused("invalid-webhook", 422, f"not a WhatsApp webhook: {exc!r}") from exc


def meta_values(body: str) -> list[dict[str, Any]]:
    """Each change's value in a webhook of Meta's, in order."""
    try:
        decoded: Any = msgspec.json.decode(body)
        return [change["value"] for entry in decoded["entry"] for change in entry["changes"]]
    except (msgspec.DecodeError, KeyError, TypeError) as exc:
        raise Refused("invalid-webhook", 422, f"not a WhatsApp webhook: {exc!r}") from exc


def arrival_id(transport: str, line: str, carrier_id: str) -> str:
    """The id a message that arrived is stored under: the carrier's, for the line it came
    to (one email to two people comes once for each line, with the one Message-Id)."""
    digest = hashlib.sha256(f"{line}\n{carrier_id}".encode()).hexdigest()[:32]
    return f"{transport}-{digest}"


def arrival(inbound: Inbound) -> Arrival:
    """The one message in a webhook of Twilio's or Mailgun's, before its signature is
    checked."""
    fields = dict(parse_qsl(inbound.body, keep_blank_values=True))
    if inbound.transport == "sms":
        names = ("From", "To", "Body", "MessageSid")
    elif inbound.transport == "voice":
        names = ("From", "To", "RecordingUrl", "CallSid")
    else:
        names = ("sender", "recipient", "body-plain", "Message-Id")
    missing = [n for n in names if not fields.get(n) and n != names[2]]
    if missing:
        raise Refused("invalid-webhook", 422, f"the {inbound.transport} webhook lacks {missing}")
    sender, to, text, carrier_id = (fields.get(n, "") for n in names)
    automatic, thread = False, None
    if inbound.transport == "email":
        headers = _headers(fields)
        sender = _replies_to(fields, headers) or sender
        automatic = _automatic(headers)
        thread = thread_of(fields.get("subject", ""), carrier_id, headers)
        if fields.get("subject"):
            text = f"{fields['subject']}\n\n{text}"
    if inbound.transport != "voice":  # a call's "text" is its recording's URL
        text = _with(text, _media(fields))
    opt = _opt(fields) if inbound.transport == "sms" else None
    return Arrival(
        sender=sender,
        to=to,
        text=text,
        carrier_id=carrier_id,
        opt=opt,
        automatic=automatic,
        thread=thread,
    )


def _opt(fields: dict[str, str]) -> Opt | None:
    """Whether a text opts its sender out or back in, as Twilio reads it."""
    said = (fields.get("OptOutType") or fields.get("Body", "")).strip().lower()
    if said in _OPT_OUT:
        return "out"
    if said in _OPT_IN:
        return "in"
    return None


def _headers(fields: dict[str, str]) -> dict[str, str]:
    """An email's headers as Mailgun posts them (`message-headers`, a JSON list of name and
    value pairs), by lower-case name."""
    headers: Any = []
    with contextlib.suppress(msgspec.DecodeError):
        headers = msgspec.json.decode(fields.get("message-headers", "[]"))
    pairs = headers if isinstance(headers, list) else []
    return {str(p[0]).lower(): str(p[1]) for p in pairs if isinstance(p, list) and len(p) == 2}


def _replies_to(fields: dict[str, str], named: dict[str, str]) -> str:
    """Whom a reply to an email goes to, as a mail client answers it: its Reply-To, else
    its From. Mailgun's `sender` is the envelope's MAIL FROM, which a mailing service
    makes a bounce address for each message: a reply sent there is lost, and each message
    would land in a room of its own."""
    for header in (named.get("reply-to"), fields.get("from"), named.get("from")):
        if header and _EMAIL.match(address := parseaddr(header)[1].lower()):
            return address
    return ""


def _automatic(named: dict[str, str]) -> bool:
    """Whether an email is one an automatic responder must not answer (RFC 3834 §2): an
    `Auto-Submitted` other than "no" (an out-of-office, a bounce, a machine's notice), a
    `Precedence` of bulk, list, junk or auto_reply, or a mailing list's `List-Id`. An
    agent at send answering an out-of-office that answers it would mail without end."""
    submitted = named.get("auto-submitted", "no").split(";")[0].strip().lower()
    precedence = named.get("precedence", "").strip().lower()
    return (
        submitted != "no"
        or precedence in ("bulk", "list", "junk", "auto_reply")
        or "list-id" in named
    )


def _media(fields: dict[str, str]) -> list[str]:
    """What came with a text besides its words, as its carrier names it: Twilio's MMS
    media (MediaUrl<i>, MediaContentType<i>), where the person can fetch it, or an email's
    attachments (`attachment-<n>`, named by the gateway, which keeps no file). Read from
    the fields there are, never from a count the webhook states: this runs before its
    signature is checked."""
    urls = sorted(
        (int(name.removeprefix("MediaUrl")), value)
        for name, value in fields.items()
        if re.fullmatch(r"MediaUrl[0-9]{1,4}", name) and value
    )
    media = [f"{fields.get(f'MediaContentType{i}', 'media')}: {url}" for i, url in urls]
    attached = sorted(
        (int(name.removeprefix("attachment-")), value)
        for name, value in fields.items()
        if re.fullmatch(r"attachment-[0-9]{1,4}", name)
    )
    return media + [f"attachment, not kept: {value}" for _, value in attached]


def _with(text: str, media: list[str]) -> str:
    """`text`, then a line naming each thing that came with it; never an empty message."""
    lines = [text] if text else []
    return "\n".join([*lines, *(f"[{m}]" for m in media)]) or "[an empty message]"


def verify(inbound: Inbound, secret: str, now: datetime) -> str | None:
    """Refused unless the webhook was signed with the line's own secret. Mailgun's token
    is returned, to be taken once: its signature signs the token and a timestamp and none
    of the content, so one seen could carry any email while its timestamp is fresh (Mailgun
    says to refuse a token seen before). Twilio and Meta sign the content whole: a repeat
    of theirs is the same message, stored once by its id."""
    token = None
    if inbound.transport in ("sms", "voice"):
        fields = parse_qsl(inbound.body, keep_blank_values=True)
        ok = any(
            _same(inbound.signature, sign_twilio(secret, url, fields))
            for url in _with_and_without_port(inbound.url)
        )
    elif inbound.transport == "email":
        fields_ = dict(parse_qsl(inbound.body, keep_blank_values=True))
        token = fields_.get("token", "")
        ok = mailgun_signed(secret, fields_.get("timestamp", ""), token, fields_, now)
    else:
        ok = _same(inbound.signature, sign_meta(secret, inbound.body.encode()))
    if not ok:
        raise Refused(
            "signature-invalid",
            403,
            f"the {inbound.transport} webhook is not signed by this line's carrier",
        )
    return token


def _with_and_without_port(url: str) -> set[str]:
    """The URL as Twilio may have signed it: as it came, with its port (the scheme's own
    where it names none), and without (Twilio signs one or the other, as its own
    validators say)."""
    parts = urlsplit(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    with_port = parts._replace(netloc=f"{host}:{port}" if port else host).geturl()
    return {url, with_port, parts._replace(netloc=host).geturl()}


def mailgun_signed(
    secret: str, stamp: str, token: str, signed: dict[str, Any], now: datetime
) -> bool:
    """Whether Mailgun signed `token` at `stamp` (`signed` holds its signature); refused
    as stale when the timestamp is more than five minutes from now, or no number of
    seconds (ASCII digits: `str.isdigit` takes "²", which `int` does not)."""
    if not re.fullmatch(r"[0-9]{1,12}", stamp) or abs(now.timestamp() - int(stamp)) > MAX_SKEW_S:
        raise Refused("signature-stale", 403, "the webhook's timestamp is not within 5 min")
    return _same(str(signed.get("signature", "")), sign_mailgun(secret, stamp, token))


def verify_token(secret: str, address: str) -> str:
    """A WhatsApp line's verify token for Meta's handshake: its number, which finds the
    line, and a MAC under the line's own app secret, which only tether and the person (who
    holds that secret) can make. The secret is never shown; this is not it."""
    mac = hmac.new(secret.encode(), f"tether-verify:{address}".encode(), "sha256").hexdigest()
    return f"{address.lstrip('+')}.{mac[:32]}"


def handshake(url: str) -> tuple[str, str, str]:
    """Meta's subscription handshake (`hub.mode=subscribe`, `hub.verify_token`,
    `hub.challenge` in the callback URL's query): the line's address its token names, the
    token, and the challenge to say back."""
    query = dict(parse_qsl(urlsplit(url).query))
    token, challenge = query.get("hub.verify_token", ""), query.get("hub.challenge", "")
    digits = token.partition(".")[0]
    if query.get("hub.mode") != "subscribe" or not challenge or not _E164.match(f"+{digits}"):
        raise Refused(
            "invalid-webhook",
            422,
            "Meta's handshake is hub.mode=subscribe with hub.verify_token and hub.challenge",
        )
    return f"+{digits}", token, challenge


def verify_handshake(inbound: Inbound, secret: str, _: datetime) -> None:
    """Refused unless the handshake's verify token is the line's own."""
    address, token, _challenge = handshake(inbound.url)
    if not _same(token, verify_token(secret, address)):
        raise Refused("signature-invalid", 403, "the verify token is not this line's")


def sign_twilio(token: str, url: str, fields: list[tuple[str, str]]) -> str:
    payload = url + "".join(k + v for k, v in sorted(fields))
    return base64.b64encode(hmac.digest(token.encode(), payload.encode(), "sha1")).decode()


def sign_mailgun(key: str, timestamp: str, token: str) -> str:
    return hmac.new(key.encode(), (timestamp + token).encode(), "sha256").hexdigest()


def sign_meta(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, "sha256").hexdigest()


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def _meta_arrival(message: dict[str, Any], value: dict[str, Any]) -> Arrival:
    """A WhatsApp message; one of type `system` is WhatsApp's own (its sender changed their
    number or security code), sent automatically."""
    return Arrival(
        sender="+" + str(message["from"]).lstrip("+"),
        to="+" + str(value["metadata"]["display_phone_number"]).lstrip("+"),
        text=_said(message),
        carrier_id=str(message["id"]),
        automatic=message.get("type") == "system",
    )


def _said(message: dict[str, Any]) -> str:
    """What a WhatsApp message says, by its type: its text, the button or list reply
    chosen, a reaction's emoji, a place; anything else (an image, a document, audio) its
    caption and a line naming what it was, which the person fetches by its media id."""
    kind = str(message.get("type", "text"))
    part = message.get(kind) if isinstance(message.get(kind), dict) else {}
    match kind:
        case "text":
            return _with(str(part.get("body", "")), [])
        case "button":
            return _with(str(part.get("text", "")), [])
        case "interactive":
            chosen = part.get(str(part.get("type", ""))) or {}
            return _with(str(chosen.get("title", "")), [])
        case "reaction":
            return _with(str(part.get("emoji", "")), [])
        case "system":
            return _with(str(part.get("body", "")), [])
        case "location":
            where = [str(part[k]) for k in ("name", "address") if part.get(k)]
            at = f"{part.get('latitude')},{part.get('longitude')}"
            return _with("", [" ".join(["location", *where, at])])
    named = [str(part[k]) for k in ("mime_type", "filename", "id") if part.get(k)]
    return _with(str(part.get("caption", "")), [" ".join([kind, *named])])
