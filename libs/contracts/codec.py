"""JSON as every process writes and reads it: exact decimals, unknown fields refused.

Non-integer numbers decode to Decimal wherever a type leaves them free (JSON values inside
`Any`), and Decimals encode back as JSON numbers, so money keeps every digit on every hop.
"""

import re
from decimal import Decimal
from typing import Any

import msgspec

from libs.contracts.base import PRINTABLE, TEXT_CHARACTER
from libs.contracts.problem import Refused

__all__ = ["bounded", "decoder", "encode", "explained"]

encode = msgspec.json.Encoder(decimal_format="number").encode


def decoder(type_: Any = Any) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(type_, float_hook=Decimal)


def bounded(name: str, document: Any, most: int) -> None:
    """A free-form document that is kept (a grant, an act's envelope, a mod's manifest) is
    at most `most` bytes of JSON, where a body alone would allow a MiB: past it, refused
    `<name>-too-large`, naming its size, before anything is stored."""
    if (size := len(encode(document))) > most:
        raise Refused(
            f"{name}-too-large",
            422,
            f"a {name} is at most {most:,} bytes of JSON; this one is {size:,}",
        )


# A text's pattern said by what its characters may not be: msgspec names the regex a
# value did not match, which whoever typed the text should not have to read.
_TEXTS = (
    (
        repr(PRINTABLE)[1:-1],
        "printable text (no control character, zero-width space, line or paragraph "
        "separator, bidi control or byte order mark)",
    ),
    (repr(TEXT_CHARACTER)[1:-1], "text with no control character but a tab and line breaks"),
)
_MATCHING = re.compile(r"`str` matching regex '((?:[^'\\]|\\.)*)'")


def explained(exc: msgspec.ValidationError) -> str:
    """msgspec's words for a value its type refuses, a text's pattern said in words and
    any other's as it is written, without the `(?!\\n)` every pattern ends with (base.py)."""

    def words(found: re.Match[str]) -> str:
        pattern = found[1].replace("\\\\", "\\").removesuffix("(?!\\n)")
        return next((w for c, w in _TEXTS if c in found[1]), f"`str` matching `{pattern}`")

    return _MATCHING.sub(words, str(exc))
