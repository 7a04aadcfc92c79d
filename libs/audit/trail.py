"""What every writer records through: `Trail.change` appends the record before the change.

Records reach an org's chain only through the audit service (`tether.audit.append`), the
one credential that may publish to the AUDIT stream.
"""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from nats.aio.client import Client

from libs.contracts.audit import APPEND, Append, AuditRecord
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused, Unavailable
from libs.runtime.calls import call

__all__ = ["AuditUnavailable", "Trail"]

_log = logging.getLogger(__name__)


class AuditUnavailable(Unavailable):
    """The record could not be written, so the change it records must not happen. It is a
    transient failure (503): asking again may succeed."""


class Trail:
    def __init__(self, nc: Client, *, service: str, timeout: float = 5.0) -> None:
        self._nc, self._service, self._timeout = nc, service, timeout

    @asynccontextmanager
    async def change(
        self,
        org: str,
        *,
        actor: Principal | None,
        action: str,
        target: str = "",
        data: dict[str, Any] | None = None,
    ) -> AsyncIterator[AuditRecord]:
        """Record first, then let the body make the change.

        If the record cannot be written the body never runs. If the body fails, a
        `<action>.failed` record follows, so the trail never claims a change that did not
        happen without saying so.
        """
        record = await self.append(org, actor=actor, action=action, target=target, data=data)
        try:
            yield record
        except BaseException as exc:
            try:
                await self.append(
                    org,
                    actor=actor,
                    action=f"{action}.failed",
                    target=target,
                    data={"record": record.n, "error": type(exc).__name__},
                )
            except AuditUnavailable:
                _log.error("could not record failure of audit record %s/%d", org, record.n)
            raise

    async def append(
        self,
        org: str,
        *,
        actor: Principal | None,
        action: str,
        target: str = "",
        data: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> AuditRecord:
        request = Append(org=org, actor=actor, action=action, target=target, data=data or {}, at=at)
        try:
            return await call(
                self._nc, APPEND, request, caller=self._service, timeout=self._timeout
            )
        except Exception as exc:
            detail = f"audit record for {org} not written: {exc!r}"
            raise AuditUnavailable(Refused("audit-unavailable", 503, detail).problem) from exc
