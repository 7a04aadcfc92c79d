"""The base of every type that crosses a subject: strict JSON, unknown fields refused."""

import re
from datetime import datetime
from typing import Annotated

import msgspec

__all__ = [
    "MAX_INT",
    "NOT_TEXT_CHARACTER",
    "PRINTABLE",
    "TEXT_CHARACTER",
    "Contract",
    "Count",
    "Instant",
    "Name",
    "OrgId",
    "Seq",
    "UserId",
    "home_org",
    "key_token",
]


class Contract(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A message on the bus. Decoding refuses any field the type does not name."""


# Every integer a client sends is one every JSON parser reads exactly (2^53 - 1), and one
# the store holds: a stream sequence is a uint64.
MAX_INT = 2**53 - 1
# A message's place in a stream, from 1.
Seq = Annotated[int, msgspec.Meta(ge=1, le=MAX_INT)]
# How many, or a cursor before the first: from 0.
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT)]
# An instant: RFC 3339 with its offset (every service writes UTC, "Z"). A time without one
# names no instant, so it is refused where it is decoded, the field named; the JSON Schema
# says `date-time`, which a client's generator reads as a time, not a string.
Instant = Annotated[datetime, msgspec.Meta(tz=True)]

# Every pattern ends `$(?!\n)`: Python's `$` also matches before a final newline, so
# `^[a-z]+$` takes "acme\n" (a room member, a title with a control character). The
# lookahead refuses it; to a JSON Schema reader, whose `$` is the end, it changes nothing.

# An org id is one NATS subject token, so it can key streams and subjects safely.
OrgId = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$(?!\n)")]

# A character drawn as text on one line: no control character (C0, DEL, C1), no line or
# paragraph separator, no zero-width space, word joiner or byte order mark, which hide in
# it, and no bidi embedding, override or isolate, which reorder what is shown. The joiners
# and marks that scripts and emoji need (U+200C, U+200D, U+200E, U+200F) are text.
_HIDDEN = r"\x00-\x1f\x7f-\x9f\u200b\u2028-\u202e\u2060-\u2069\ufeff"
PRINTABLE = rf"[^{_HIDDEN}]"

# A character of a message's text, of any number of lines: any but the C0 controls and
# DEL, which no carrier takes and no XML document (TwiML's <Say>) may hold. A tab and line
# breaks are text.
_CONTROLS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
TEXT_CHARACTER, NOT_TEXT_CHARACTER = rf"[^{_CONTROLS}]", rf"[{_CONTROLS}]"

# A short, printable name: persona names, agent ids, keys.
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=rf"^{PRINTABLE}+$(?!\n)")]

# A person: `<owner>/<name>`, where the owner half is their home org (hip-0524 §2), and
# the name printable with no space: every person id is a `sub` a token may carry (`Name`).
_PERSON = rf"([a-z0-9][a-z0-9_-]{{0,62}})/[^\x20/{_HIDDEN}]{{1,128}}"
UserId = Annotated[str, msgspec.Meta(pattern=rf"^{_PERSON}$(?!\n)")]
_HOME = re.compile(rf"^{_PERSON}$(?!\n)")


def home_org(user: str) -> str | None:
    """The person's home org, the owner half of their id; None for anything not a person."""
    found = _HOME.match(user)
    return found[1] if found else None


_UNSAFE = re.compile(r"[^A-Za-z0-9_/-]")


def key_token(value: str) -> str:
    """`value` as one token of a KV key: anything a key may not hold, and `.` and `=`, is
    written `=XX` (its UTF-8 bytes in hex), so distinct values stay distinct keys."""
    return _UNSAFE.sub(lambda m: "".join(f"={b:02X}" for b in m[0].encode()), value)
