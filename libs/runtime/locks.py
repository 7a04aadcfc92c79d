"""Taking writes to one key one at a time within a replica."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["KeyedLocks"]


class KeyedLocks:
    """One lock per key, forgotten once nobody holds or waits for it.

    A compare-and-set still settles races between replicas; this spares the writers of one
    replica from losing to each other and retrying (200 writers on one key would otherwise
    spin through up to 200 rounds of reads)."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._held.get(key) or (asyncio.Lock(), 0)
        self._held[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._held[key]
            if users == 1:
                del self._held[key]
            else:
                self._held[key] = (lock, users - 1)
