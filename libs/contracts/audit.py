"""`tether.audit.append`: the one way onto an org's hash chain, and the record it writes.

Only the audit service may publish to the AUDIT stream; every other service asks it to
append, on a subject served by caller, so the record's `service` is what the bus proved.
"""

from typing import Annotated, Any

import msgspec

from libs.contracts.base import Contract, Instant, OrgId
from libs.contracts.principal import Principal
from libs.contracts.registry import ANY_SERVICE, request_subject, service_contract
from libs.contracts.streams import AUDIT

__all__ = ["APPEND", "CONTRACT", "GENESIS", "Append", "AuditRecord"]

# The `prev` of an org's first record.
GENESIS = "0" * 64
# A request's key as the kept answers hold it: KV key tokens, joined by dots.
RequestKey = Annotated[
    str, msgspec.Meta(max_length=256, pattern=r"^[-/_=A-Za-z0-9]+(\.[-/_=A-Za-z0-9]+)*$(?!\n)")
]
# A change's own id, made by its caller: 128 random bits in hex.
ChangeId = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{32}$(?!\n)")]


class AuditRecord(Contract):
    """What was done, by whom, for which org, chained to what was stored before it.

    `n` counts the org's valid records from 1. `prev` is the previous record's `hash`
    (GENESIS for the first), or the SHA-256 of the raw bytes of whatever else was stored
    before it. `hash` is the SHA-256, in hex, of this record's JSON with `hash` left out,
    keys sorted and no whitespace. `data` should hold no binary floats: money travels as
    decimal strings so that every language hashes the same bytes.
    """

    org: OrgId
    n: int
    at: Instant
    service: str
    actor: Principal | None
    action: str
    target: str = ""
    data: dict[str, Any] = {}
    prev: str = GENESIS
    hash: str = ""


class Append(Contract):
    """A record to add to `org`'s chain; the audit service sets `service`, `n`, `prev`,
    `hash`, and `at` when it is not given.

    `forgets`, on the record that a change failed, is the key its record was appended
    under: the change asked again under that key is another try, recorded again. A key is
    the calling service's own: another's under the same words is another key.

    `change_id`, on the record made before a change, is that change's: the record is
    stored once under it. On the record that a change failed, it is that record's own.
    `abandoned` says its caller never heard whether it was stored, and made no change: the
    record (stored now if it never was) is followed by `<action>.abandoned`.

    `failure_of` makes this the record that the change recorded as record `n` failed: it
    names no change to be made, so it is stored however late. Said, never read from the
    action's name: a change may well be named `....failed` (`ladder.window.failed`)."""

    org: OrgId
    actor: Principal | None
    action: str
    target: str = ""
    data: dict[str, Any] = {}
    at: Instant | None = None
    forgets: RequestKey | None = None
    change_id: ChangeId | None = None
    abandoned: bool = False
    failure_of: Annotated[int, msgspec.Meta(ge=1)] | None = None


APPEND = request_subject(
    "audit",
    "append",
    Append,
    AuditRecord,
    "append a record to an org's audit chain",
    callers=frozenset({ANY_SERVICE}),
    by_caller=True,
)

CONTRACT = service_contract("audit", [APPEND], streams=(AUDIT,), shared_streams=())
