"""Streams that cross services: the audit trail, the events, fired timers."""

import msgspec

__all__ = [
    "AUDIT",
    "DEAD",
    "EVENTS",
    "SHARED",
    "TIMERS",
    "StreamSpec",
    "audit_subject",
    "dead_subject",
    "timer_subject",
]


class StreamSpec(msgspec.Struct, frozen=True):
    """A stream's name and subjects. `max_age_s` 0 keeps messages until they are removed;
    `duplicate_window_s` 0 is the server's default (2 minutes)."""

    name: str
    subjects: tuple[str, ...]
    description: str
    max_age_s: float = 0
    duplicate_window_s: float = 0


# Audit records are never aged out: a chain with a purged head could not be verified.
# Its subjects sit apart from the audit service's own (`tether.audit.append.<caller>`).
AUDIT = StreamSpec(
    "AUDIT",
    ("tether.audit.chain.*",),
    "hash-chained audit records, one subject per org",
    # A change's record is stored under its change's id: its caller, never told whether it
    # was, asks again within this window, to find it and mark it abandoned. An id costs the
    # server some 230 bytes while kept (measured): at 1,000 changes a second, 28 MB.
    duplicate_window_s=120,
)
# Events are news, not records (each one's fact is stored by its service, and every change a
# person may read back is in AUDIT): a reader has a week to read one, as with TIMERS. Kept
# for good, the stream grew by one event per message stored, and a reader made later read
# every one ever published.
EVENTS = StreamSpec(
    "EVENTS",
    ("tether.evt.>",),
    "events tether.evt.<service>.<noun>.<verb>",
    max_age_s=7 * 24 * 3600,
)
# Fired timers, one subject per owner and target, each owner reading with a durable
# consumer named for it. Only deliveries live here, never a pending timer, so an age limit
# is safe: an owner has a week to read what fired.
TIMERS = StreamSpec(
    "TIMERS",
    ("tether.timer.>",),
    "fired timers tether.timer.<owner>.<target>",
    max_age_s=7 * 24 * 3600,
    # A fire re-delivered after a crash publishes again under the same Nats-Msg-Id; the
    # window is how long such a recovery may take and still be recognised.
    duplicate_window_s=3600,
)
# What a reader could not handle after every retry, parked with why: one subject per reader.
# A letter whose owner cannot take it yet is parked again every 30 s while its cause lasts
# (the rooms away, say): each time under the same id, taken once within a day.
DEAD = StreamSpec(
    "DEAD",
    ("tether.dead.>",),
    "messages no retry could handle, tether.dead.<reader>",
    duplicate_window_s=24 * 3600,
)
SHARED = {s.name: s for s in (EVENTS, TIMERS, DEAD)}


def audit_subject(org: str) -> str:
    return f"tether.audit.chain.{org}"


def timer_subject(owner: str, target: str) -> str:
    return f"tether.timer.{owner}.{target}"


def dead_subject(reader: str) -> str:
    return f"tether.dead.{reader}"
