"""The streams every service shares: the audit trail and the events."""

import msgspec

__all__ = ["AUDIT", "EVENTS", "SharedStream", "audit_subject"]


class SharedStream(msgspec.Struct, frozen=True):
    name: str
    subjects: tuple[str, ...]
    description: str


# Audit records are never aged out: a chain with a purged head could not be verified.
AUDIT = SharedStream(
    "AUDIT", ("tether.audit.*",), "hash-chained audit records, one subject per org"
)
EVENTS = SharedStream("EVENTS", ("tether.evt.>",), "events tether.evt.<service>.<noun>.<verb>")


def audit_subject(org: str) -> str:
    return f"tether.audit.{org}"
