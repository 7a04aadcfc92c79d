"""What every writer records through: `Trail.change` appends the record before the change.

Records reach an org's chain only through the audit service (`tether.audit.append`), the
one credential that may publish to the AUDIT stream.
"""

import asyncio
import functools
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from nats.aio.client import Client

from libs.contracts.audit import APPEND, Append, AuditRecord
from libs.contracts.base import key_token
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused, Unavailable
from libs.runtime.calls import call
from libs.runtime.consumer import Retry
from libs.runtime.tasks import ended

__all__ = ["AuditUnavailable", "Trail"]

_log = logging.getLogger(__name__)
_AGAIN = Retry(first_s=1.0, most_s=30.0)  # its attempts unused: asked until recorded


class AuditUnavailable(Unavailable):
    """The record could not be written, so the change it records must not happen. It is a
    transient failure (503): asking again may succeed."""


class Trail:
    def __init__(self, nc: Client, *, service: str, timeout: float = 5.0) -> None:
        self._nc, self._service, self._timeout = nc, service, timeout
        # Failures still to be recorded: the task asking again, what it asks, and its name.
        self._later: dict[asyncio.Task[None], tuple[Callable[[], Awaitable[AuditRecord]], str]] = {}

    @asynccontextmanager
    async def change(
        self,
        org: str,
        *,
        actor: Principal | None,
        action: str,
        target: str = "",
        data: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> AsyncIterator[AuditRecord]:
        """Record first, then let the body make the change.

        If the record cannot be written the body never runs, and one the audit stores
        too late to say so in time is followed by `<action>.abandoned`. If the body fails,
        a `<action>.failed` record follows, so the trail never claims a change that did
        not happen without saying so. One that cannot be written at once (the bus away) is
        asked again until it is, while the process runs, and once more when it stops
        (`settle`). A change asked again under one `key` (its request delivered again) is
        recorded once, until a try of it fails: the try after that is recorded again.
        """
        record = await self.append(
            org, actor=actor, action=action, target=target, data=data, key=key
        )
        try:
            yield record
        except BaseException as exc:
            failed = functools.partial(
                self.append,
                org,
                actor=actor,
                action=f"{action}.failed",
                target=target,
                data={"record": record.n, "error": type(exc).__name__},
                key=f"failed.{key_token(org)}.{record.n}",  # recorded once, however often asked
                forgets=key,
            )
            try:
                await failed()
            except AuditUnavailable:
                # Most often the bus, which failed the change too: asked again once back.
                _log.warning("failure of audit record %s/%d not yet recorded", org, record.n)
                name = f"{org}/{record.n}"
                task = asyncio.create_task(_until_recorded(failed, name))
                self._later[task] = (failed, name)
                task.add_done_callback(self._later.pop)
            raise

    async def settle(self) -> None:
        """Ask for each failure not yet recorded once more, now. A service calls it as it
        stops, before its connection goes: a stop between two tries (a rollout just after
        an outage) would otherwise leave a record the bus would now take unwritten. One
        still refused is said as an error, naming the record that stands unanswered."""
        for task, (failed, name) in list(self._later.items()):
            await ended(task)
            try:
                await failed()
            except AuditUnavailable:
                _log.error("could not record failure of audit record %s", name)
                continue
            _log.info("failure of audit record %s recorded as the service stopped", name)

    async def append(
        self,
        org: str,
        *,
        actor: Principal | None,
        action: str,
        target: str = "",
        data: dict[str, Any] | None = None,
        at: datetime | None = None,
        key: str | None = None,
        forgets: str | None = None,
    ) -> AuditRecord:
        request = Append(
            org=org, actor=actor, action=action, target=target, data=data or {}, at=at,
            forgets=forgets,
        )  # fmt: skip
        try:
            return await call(
                self._nc, APPEND, request, caller=self._service, key=key, timeout=self._timeout
            )
        except Exception as exc:
            if isinstance(exc, Refused) and exc.problem.status < 500:
                raise  # the audit's own answer (`key` first asked with another record): final
            detail = f"audit record for {org} not written: {exc!r}"
            raise AuditUnavailable(Refused("audit-unavailable", 503, detail).problem) from exc


async def _until_recorded(failed: Callable[[], Awaitable[AuditRecord]], record: str) -> None:
    """Ask again, a second apart and doubling to 30 s, until the failure is recorded."""
    for tries in itertools.count(1):
        await asyncio.sleep(_AGAIN.delay(tries))
        try:
            await failed()
        except AuditUnavailable:
            continue
        _log.info("failure of audit record %s recorded late", record)
        return
