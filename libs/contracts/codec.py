"""JSON as every process writes and reads it: exact decimals, unknown fields refused.

Non-integer numbers decode to Decimal wherever a type leaves them free (JSON values inside
`Any`), and Decimals encode back as JSON numbers, so money keeps every digit on every hop.
"""

import json
from decimal import Decimal
from typing import Any

import msgspec

from libs.contracts.problem import Refused

__all__ = ["bounded", "decoder", "encode", "refuse_repeated"]

encode = msgspec.json.Encoder(decimal_format="number").encode


def decoder(type_: Any = Any) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(type_, float_hook=Decimal)


def refuse_repeated(raw: bytes) -> None:
    """A name given twice in one object is refused, naming it: which of the two counts is
    each reader's guess (RFC 8259 §4), and a reader before us that took the other one (a
    proxy, a reviewer, the client's own log) saw another request than the one carried out."""
    try:
        json.loads(raw, object_pairs_hook=_named_once)
    except ValueError:  # not JSON: its decoder says what is wrong
        pass


def _named_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    named = dict(pairs)
    if len(named) < len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise Refused(
                    "duplicate-key", 422, f"{name!r} is named twice in one object; name it once"
                )
            seen.add(name)
    return named


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
