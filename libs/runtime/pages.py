"""A page of a list answer, bounded in bytes as well as in count.

An answer travels the bus as one message, and one over the server's max payload is never
delivered (`Service` answers `reply-too-large` instead). A page of `limit` items can still
be any size where an item can (a grant is free-form JSON up to the 1 MiB a body may be), so
a page also ends before its items' JSON passes PAGE_BYTES, and its cursor names the last.
"""

from collections.abc import Sequence
from typing import TypeVar

from libs.contracts import codec

__all__ = ["PAGE_BYTES", "first", "within"]

PAGE_BYTES = 512 * 1024  # half NATS's default max payload, whatever a server's is set to
MOST = 200  # items an answer holds at most, as the longest page does
T = TypeVar("T")


def within(items: Sequence[T], limit: int, budget: int = PAGE_BYTES) -> list[T]:
    """The first `limit` of `items`, fewer where their JSON would pass `budget` bytes; never
    none of them (an item alone came through the bus to be stored, so goes back through it)."""
    page: list[T] = []
    size = 0
    for item in items[:limit]:
        size += len(codec.encode(item))
        if page and size > budget:
            break
        page.append(item)
    return page


def first(items: Sequence[T], limit: int = MOST) -> tuple[list[T], bool]:
    """`within`, and whether any of `items` were left behind: a page's cursor is then its
    last; a list with no cursor (what waits on a person: what is done leaves it) says
    `more`."""
    page = within(items, limit)
    return page, len(page) < len(items)
