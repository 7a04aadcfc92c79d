"""The base of every type that crosses a subject: strict JSON, unknown fields refused."""

from typing import Annotated

import msgspec

__all__ = ["Contract", "Name", "OrgId"]


class Contract(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A message on the bus. Decoding refuses any field the type does not name."""


# An org id is one NATS subject token, so it can key streams and subjects safely.
OrgId = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")]

# A short, printable name: persona names, agent ids, keys.
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]
