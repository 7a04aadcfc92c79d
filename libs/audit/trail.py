"""What every writer records through: `Trail.change` appends the record before the change.

Records reach an org's chain only through the audit service (`tether.audit.append`), the
one credential that may publish to the AUDIT stream.
"""

import asyncio
import functools
import itertools
import logging
import uuid
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

__all__ = ["AuditUnavailable", "AuditUnheard", "Trail"]

_log = logging.getLogger(__name__)
_AGAIN = Retry(first_s=1.0, most_s=30.0)  # its attempts unused: asked until recorded
_FAILED = uuid.UUID("5d0c2f1e-7a43-4c1b-9b8e-0f6a1d2c3b4a")  # names the id of a `.failed`


class AuditUnavailable(Unavailable):
    """The record could not be written, so the change it records must not happen. It is a
    transient failure (503): asking again may succeed."""


class AuditUnheard(AuditUnavailable):
    """The audit never answered: the record may have been stored all the same."""


class Trail:
    def __init__(self, nc: Client, *, service: str, timeout: float = 5.0) -> None:
        self._nc, self._service, self._timeout = nc, service, timeout
        # Records still to be written: the task asking again, what it asks, and its name.
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
        too late to say so in time is followed by `<action>.abandoned`; so is one whose
        answer never came back (it may have been stored all the same), unless keyed. If
        the body fails, a `<action>.failed` record follows, so the trail never claims a
        change that did not happen without saying so. A mark that cannot be written at once
        (the bus away) is asked again until it is, while the process runs, and once more
        when it stops (`settle`). A change asked again under one `key` (its request
        delivered again) is recorded once, until a try of it fails: the try after that is
        recorded again.
        """
        # A keyed change is recorded under its key, and its record is that of every try of
        # it until one fails: one whose answer was lost is the record of the retry its key
        # brings. Any other is found, if stored, under an id of its own.
        change_id = None if key is not None else uuid.uuid4().hex
        record_of = functools.partial(
            self.append, org, actor=actor, action=action, target=target, data=data,
            change_id=change_id,
        )  # fmt: skip
        try:
            record = await record_of(key=key)
        except AuditUnheard:
            if change_id is not None:
                # Asked apart, at once: the change lets go now of what it holds (its
                # entry's turn among this replica's writers).
                name = f"abandonment of {action} for {org} ({change_id})"
                _log.warning("%s asked: its record's answer never came", name)
                self._ask_later(functools.partial(record_of, abandoned=True), name, wait=False)
            raise
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
                # and under an id of its own, for an audit replica that lost the key's answer
                change_id=uuid.uuid5(_FAILED, f"{org} {record.n}").hex,
                failure_of=record.n,
            )
            await self._until_written(failed, f"failure of audit record {org}/{record.n}")
            raise

    async def _until_written(self, write: Callable[[], Awaitable[AuditRecord]], name: str) -> None:
        """`write()` now, or, if the audit cannot be asked (most often the bus, which failed
        the change too), again until it is written."""
        try:
            await write()
        except AuditUnavailable:
            _log.warning("%s not yet recorded", name)
            self._ask_later(write, name)

    def _ask_later(
        self, write: Callable[[], Awaitable[AuditRecord]], name: str, *, wait: bool = True
    ) -> None:
        task = asyncio.create_task(_until_recorded(write, name, wait=wait))
        self._later[task] = (write, name)
        task.add_done_callback(self._later.pop)

    async def settle(self) -> None:
        """Ask for each mark not yet recorded once more, now. A service calls it as it
        stops, before its connection goes: a stop between two tries (a rollout just after
        an outage) would otherwise leave a record the bus would now take unwritten. One
        still refused is said as an error, naming the record that stands unanswered."""
        for task, (write, name) in list(self._later.items()):
            await ended(task)
            try:
                await write()
            except AuditUnavailable:
                _log.error("could not record %s", name)
                continue
            _log.info("%s recorded as the service stopped", name)

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
        change_id: str | None = None,
        abandoned: bool = False,
        failure_of: int | None = None,
    ) -> AuditRecord:
        request = Append(
            org=org, actor=actor, action=action, target=target, data=data or {}, at=at,
            forgets=forgets, change_id=change_id, abandoned=abandoned, failure_of=failure_of,
        )  # fmt: skip
        try:
            return await call(
                self._nc, APPEND, request, caller=self._service, key=key, timeout=self._timeout
            )
        except Exception as exc:
            if isinstance(exc, Refused) and exc.problem.status < 500:
                raise  # the audit's own answer (`key` first asked with another record): final
            detail = f"audit record for {org} not written: {exc!r}"
            problem = Refused("audit-unavailable", 503, detail).problem
            if isinstance(exc, Unavailable) and exc.problem.rule == "service-timeout":
                raise AuditUnheard(problem) from exc
            raise AuditUnavailable(problem) from exc


async def _until_recorded(
    write: Callable[[], Awaitable[AuditRecord]], name: str, *, wait: bool
) -> None:
    """Ask until `write` is recorded: at once unless to `wait`, then a second apart and
    doubling to 30 s."""
    for tries in itertools.count(1):
        late = wait or tries > 1
        if late:
            await asyncio.sleep(_AGAIN.delay(tries))
        try:
            await write()
        except AuditUnavailable:
            continue
        if late:
            _log.info("%s recorded late", name)
        return
