"""JSON as every process writes and reads it: exact decimals, unknown fields refused.

Non-integer numbers decode to Decimal wherever a type leaves them free (JSON values inside
`Any`), and Decimals encode back as JSON numbers, so money keeps every digit on every hop.
"""

from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["decoder", "encode"]

encode = msgspec.json.Encoder(decimal_format="number").encode


def decoder(type_: Any = Any) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(type_, float_hook=Decimal)
