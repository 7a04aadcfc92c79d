"""A message that left by a line, and how it fares: each carrier's signed status callback,
read in that carrier's style, moves it forward only (queued, sent, delivered), and a
failure is final.

    sms       Twilio: form fields MessageSid, MessageStatus, From (the line), ErrorCode;
              signed as its message webhook.
    whatsapp  Meta's Cloud API: `statuses` in a change's value, `metadata.
              display_phone_number` the line; signed as its message webhook.
    email     Mailgun's events: JSON with `event-data` (event, message.headers.message-id,
              envelope.sender the line, delivery-status.message) and `signature`
              {timestamp, token, signature}, refused five minutes from now.
"""

import hashlib
from datetime import datetime
from typing import Any, Literal
from urllib.parse import parse_qsl

import msgspec

from libs.contracts.problem import Refused
from libs.contracts.rooms import Delivery, Inbound, Transport
from services.rooms.domain.lines import mailgun_signed, meta_values, verify

__all__ = ["Report", "carrier_id", "handed_over", "moved", "reports", "verify_report"]

Status = Literal["queued", "sent", "delivered", "failed"]
_ORDER: dict[str, int] = {"queued": 0, "sent": 1, "delivered": 2, "failed": 3}
_TWILIO: dict[str, Status] = {
    **dict.fromkeys(("accepted", "scheduled", "queued", "sending"), "queued"),
    "sent": "sent",
    **dict.fromkeys(("delivered", "read"), "delivered"),
    # A message sent in parts of which only some arrived did not arrive as written: its
    # person is told so, as of one that failed, to send it again or let it be.
    **dict.fromkeys(("undelivered", "failed", "canceled", "partially_delivered"), "failed"),
}
_META: dict[str, Status] = {"sent": "sent", "delivered": "delivered", "read": "delivered",
                            "played": "delivered", "failed": "failed"}  # fmt: skip
# An email opened, clicked, complained of or unsubscribed from was delivered; Mailgun's
# `failed` is final only when its severity is permanent (a temporary one, it tries again).
_MAILGUN: dict[str, Status] = {
    "accepted": "queued",
    **dict.fromkeys(("delivered", "opened", "clicked", "complained", "unsubscribed"), "delivered"),
    **dict.fromkeys(("failed", "rejected"), "failed"),
}


# A recipient who marks an email as spam, or unsubscribes, has opted out of what the line
# sends them, as a STOP does by text (Mailgun suppresses every email to them after).
_MAILGUN_OPT_OUT = frozenset({"complained", "unsubscribed"})


class Report(msgspec.Struct, frozen=True):
    """One status callback: which of our addresses sent the message, the carrier's id for
    it, what it says now, and whether its recipient opted out of the line."""

    line: str
    carrier_id: str
    status: Status
    error: str | None = None
    opts_out: bool = False


def carrier_id(transport: Transport, key: str) -> str:
    """The recording adapter's id for what it handed over (a carrier would give its own)."""
    return f"rec-{transport}-{hashlib.sha256(key.encode()).hexdigest()[:24]}"


def handed_over(transport: Transport, carrier_id: str, now: datetime) -> Delivery:
    return Delivery(transport=transport, carrier_id=carrier_id, status="queued", at=now)


def moved(delivery: Delivery, report: Report, now: datetime) -> Delivery:
    """Forward only: a report behind what is known (callbacks arrive out of order), or after
    a final status, changes nothing."""
    final = delivery.status in ("delivered", "failed")
    if final or _ORDER[report.status] <= _ORDER[delivery.status]:
        return delivery
    error = report.error if report.status == "failed" else None
    return msgspec.structs.replace(delivery, status=report.status, at=now, error=error)


def reports(inbound: Inbound) -> list[Report]:
    """The statuses a callback reports: Meta's any number, batched as its messages are
    (and beside them, at one address); any other carrier's one."""
    try:
        match inbound.transport:
            case "sms":
                return [_twilio(dict(parse_qsl(inbound.body, keep_blank_values=True)))]
            case "whatsapp":  # a status Meta adds later is passed over, not its batch lost
                return [
                    _meta(status, value)
                    for value in meta_values(inbound.body)
                    for status in value.get("statuses") or []
                    if status.get("status") in _META
                ]
            case "email":
                return [_mailgun(msgspec.json.decode(inbound.body))]
            case "voice":
                raise Refused("invalid-webhook", 422, "a call leaves nothing to deliver")
    except (msgspec.DecodeError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise Refused(
            "invalid-webhook", 422, f"not a {inbound.transport} status callback: {exc!r}"
        ) from exc
    raise AssertionError(inbound.transport)


def verify_report(inbound: Inbound, secret: str, now: datetime) -> str | None:
    """Signed as the carrier signs its message webhooks, and Mailgun's token returned to be
    taken once as theirs is; Mailgun's events carry their signature inside the JSON."""
    if inbound.transport != "email":
        return verify(inbound, secret, now)
    signed = msgspec.json.decode(inbound.body).get("signature") or {}
    stamp, token = str(signed.get("timestamp", "")), str(signed.get("token", ""))
    if not mailgun_signed(secret, stamp, token, signed, now):
        raise Refused("signature-invalid", 403, "the email callback is not signed by this line")
    return token


def _twilio(fields: dict[str, str]) -> Report:
    given = fields["MessageStatus"]
    code = fields.get("ErrorCode")
    error = f"error {code}" if code else None
    if given == "partially_delivered":
        error = "only part of it arrived" + (f" ({error})" if error else "")
    return Report(fields["From"], fields["MessageSid"], _known(_TWILIO, given), error)


def _meta(status: Any, value: Any) -> Report:
    errors = status.get("errors") or [{}]
    error = errors[0].get("title") or errors[0].get("message")
    line = "+" + str(value["metadata"]["display_phone_number"]).lstrip("+")
    return Report(line, str(status["id"]), _known(_META, status["status"]), error)


def _mailgun(body: Any) -> Report:
    event = body["event-data"]
    message_id = str(event["message"]["headers"]["message-id"])
    status = _known(_MAILGUN, event["event"])
    if event["event"] == "failed" and event.get("severity") == "temporary":
        status = "queued"  # still Mailgun's to deliver: never a failure, never moved back
    error = (event.get("delivery-status") or {}).get("message") or None
    opts_out = event["event"] in _MAILGUN_OPT_OUT
    return Report(event["envelope"]["sender"], message_id, status, error, opts_out)


def _known(statuses: dict[str, Status], given: str) -> Status:
    if given not in statuses:
        raise Refused("invalid-webhook", 422, f"{given!r} is no status this line reports")
    return statuses[given]
