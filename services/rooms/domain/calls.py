"""A live call on a person's voice line (hip-0524 §11, §16.10). A call has no pause in
which to ask the person, so only at `send` does the agent take it, speaking its reply at
once; at `draft` and `confirm` it does not speak: the call rings the person's forwarding
number, or takes a voicemail into the room. No window is shortened to fit a call: the
ladder's decision for a synchronous reply has none.

What the carrier is told is TwiML (Twilio Programmable Voice's own answer format).
"""

from datetime import datetime
from xml.sax.saxutils import escape, quoteattr

from libs.contracts.rooms import Message, Room

__all__ = [
    "SPEAK_WITHIN_S",
    "arrived",
    "forwarded",
    "left_voicemail",
    "spoken",
    "taken",
    "voicemail",
    "voicemail_url",
]

UNAVAILABLE = "The person you called cannot take your call. Leave a message after the tone."
TAKEN = "Your message was taken. Goodbye."
MAX_VOICEMAIL_S = 120
# How long a ringing call waits for the agent's reply (TETHER_SPEAK_WITHIN): within the
# gateway's own wait for the answer (TETHER_REQUEST_TIMEOUT, 5 s) and so within Twilio's
# 15 s for its webhook, else the caller hears the carrier's error and nothing at all.
SPEAK_WITHIN_S = 3.0


def arrived(room: Room, caller: str, now: datetime) -> Message:
    """The call, in the person's room for the caller. Addressed to no one, so no agent
    drafts a text reply to it later: what answers a call is decided while it rings."""
    return _from(room, caller, f"Call from {caller}", now)


def left_voicemail(room: Room, caller: str, url: str, seconds: str, now: datetime) -> Message:
    return _from(room, caller, f"Voicemail ({seconds or '?'} s): {url}", now)


def _from(room: Room, caller: str, text: str, now: datetime) -> Message:
    return Message(
        seq=0,
        room=room.id,
        at=now,
        author=f"voice:{caller}",
        author_kind="human",
        text=text,
        transport="voice",
    )


def spoken(text: str) -> str:
    return f"<Response><Say>{escape(text)}</Say></Response>"


def forwarded(number: str) -> str:
    return f"<Response><Dial>{escape(number)}</Dial></Response>"


def taken() -> str:
    """Said once a voicemail is recorded: the carrier runs what the recording's callback
    answers, to a caller still on the line."""
    return f"<Response><Say>{escape(TAKEN)}</Say><Hangup/></Response>"


def voicemail(action: str) -> str:
    return (
        f"<Response><Say>{escape(UNAVAILABLE)}</Say>"
        f'<Record action={quoteattr(action)} maxLength="{MAX_VOICEMAIL_S}" playBeep="true"/>'
        "</Response>"
    )


def voicemail_url(call_url: str) -> str:
    """Where the carrier posts the recording: beside the URL it called for the call."""
    return call_url.rsplit("/", 1)[0] + "/voicemail"
