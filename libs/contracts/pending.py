"""What waits on a person, gathered across the services that hold it: `GET /v1/pending`
and its stream, each item with what it admits.

A service that changes something waiting on a person says so on that person's
`tether.live.<service>.pending.<org>.<person>` (core NATS, an empty body: a nudge, never
the data), and the gateway's stream reads the list again, as the person.
"""

from datetime import datetime
from typing import Any, Literal

from libs.contracts.base import Contract, key_token
from libs.contracts.registry import live_subject

__all__ = ["Action", "Pending", "PendingItem", "changed"]

Kind = Literal["draft", "confirmation", "window", "ask", "layer_draft", "delivery"]


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
    deadline: datetime | None = None
    candidates: list[str] = []
    detail: dict[str, Any] = {}


class Pending(Contract):
    """Everything waiting on the caller, soonest deadline first, then oldest."""

    items: list[PendingItem]


def changed(service: str, org: str, person: str) -> str:
    return live_subject(service, "pending", org, key_token(person))
