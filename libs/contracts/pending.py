"""What waits on a person, gathered across the services that hold it: `GET /v1/pending`
and its stream, each item with what it admits.

A service that changes something waiting on a person says so on
`tether.live.<service>.pending.<org>.<token>` (core NATS, an empty body: a nudge, never
the data), `token` the person's key token, or `admins` for what waits on every admin of the
org; the gateway's stream reads the list again, as the person.
"""

from typing import Any, Literal

from libs.contracts.base import Contract, Instant
from libs.contracts.registry import Subject, live_subject

__all__ = ["ADMINS", "PENDING", "Action", "ListPending", "Pending", "PendingItem", "changed"]

# Never a person's token: a person's id, and so their token, always holds a `/`.
ADMINS = "admins"

Kind = Literal[
    "draft", "confirmation", "window", "ask", "layer_draft", "delivery", "question", "packet"
]


class Action(Contract, omit_defaults=True):
    """One thing the person may do to an item: `method path` with `body`."""

    name: str
    method: Literal["GET", "POST", "DELETE"]
    path: str
    body: dict[str, Any] | None = None


class PendingItem(Contract, omit_defaults=True):
    """`deadline` is when it goes (a window), lapses (an ask) or is dropped (a draft)
    by itself; none when it waits for as long as the person does."""

    kind: Kind
    id: str
    text: str
    actions: list[Action]
    room: str | None = None
    deadline: Instant | None = None
    candidates: list[str] = []
    detail: dict[str, Any] = {}


class ListPending(Contract):
    pass


class Pending(Contract):
    """Everything waiting on the caller, soonest deadline first; `more` when a service had
    more of the caller's than one answer carries (asks, say, each holding a large envelope):
    those wait behind the ones listed, and show as these are done."""

    items: list[PendingItem]
    more: bool = False


# The gateway's own vocabulary for the list it gathers: no service serves it on the bus.
PENDING = Subject(
    name="tether.gateway.pending",
    request=ListPending,
    reply=Pending,
    summary="what waits on me, gathered by the gateway",
    callers=frozenset(),
)


def changed(service: str, org: str, token: str) -> str:
    """The nudge subject for `token`: `key_token(person)`, or ADMINS."""
    return live_subject(service, "pending", org, token)
