"""JSON as every process writes and reads it: exact decimals, unknown fields refused.

Non-integer numbers decode to Decimal wherever a type leaves them free (JSON values inside
`Any`), and Decimals encode back as JSON numbers, so money keeps every digit on every hop.
"""

from decimal import Decimal
from typing import Any

import msgspec

from libs.contracts.problem import Refused

__all__ = ["bounded", "decoder", "encode"]

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
