"""An audit record: one entry in an org's hash chain on the AUDIT stream."""

from datetime import datetime
from typing import Any

from libs.contracts.base import Contract, OrgId
from libs.contracts.principal import Principal

__all__ = ["GENESIS", "AuditRecord"]

# The `prev` of an org's first record.
GENESIS = "0" * 64


class AuditRecord(Contract):
    """What was done, by whom, for which org, chained to the record before it.

    `n` counts from 1 within the org's chain. `prev` is the previous record's `hash`
    (GENESIS for the first). `hash` is the SHA-256, in hex, of this record's JSON with
    `hash` left out, keys sorted and no whitespace. `data` should hold no binary floats:
    money travels as decimal strings so that every language hashes the same bytes.
    """

    org: OrgId
    n: int
    at: datetime
    service: str
    actor: Principal | None
    action: str
    target: str = ""
    data: dict[str, Any] = {}
    prev: str = GENESIS
    hash: str = ""
