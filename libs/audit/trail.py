"""Appending to an org's chain on the AUDIT stream, and reading it back.

Appends are compare-and-set on the org's subject (`Nats-Expected-Last-Subject-Sequence`),
so two writers racing on one org retry instead of forking the chain.
"""

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import APIError, NotFoundError

from libs.audit.chain import seal
from libs.contracts.audit import AuditRecord
from libs.contracts.principal import Principal
from libs.contracts.streams import AUDIT, audit_subject

__all__ = ["AuditUnavailable", "Trail"]

_log = logging.getLogger(__name__)
_WRONG_LAST_SEQUENCE = 10071
_decode = msgspec.json.Decoder(AuditRecord).decode


class AuditUnavailable(Exception):
    """The record could not be written, so the change it records must not happen."""


class Trail:
    def __init__(self, js: JetStreamContext, *, service: str, attempts: int = 200) -> None:
        self._js = js
        self._service = service
        self._attempts = attempts

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
        draft = AuditRecord(
            org=org,
            n=0,
            at=at or datetime.now(UTC),
            service=self._service,
            actor=actor,
            action=action,
            target=target,
            data=data or {},
        )
        subject = audit_subject(org)
        try:
            for attempt in range(self._attempts):
                last, last_seq = await self._last(subject)
                record = seal(draft, after=last)
                try:
                    await self._js.publish(
                        subject,
                        msgspec.json.encode(record),
                        headers={"Nats-Expected-Last-Subject-Sequence": str(last_seq)},
                    )
                    return record
                except APIError as exc:
                    if exc.err_code != _WRONG_LAST_SEQUENCE:
                        raise
                # Another writer appended first: back off a little, at random, and re-read.
                await asyncio.sleep(random.uniform(0, 0.001 * min(attempt + 1, 20)))
        except Exception as exc:
            raise AuditUnavailable(f"audit record for {org} not written: {exc!r}") from exc
        raise AuditUnavailable(f"audit chain of {org} too contended: {self._attempts} attempts")

    async def records(self, org: str) -> AsyncIterator[AuditRecord]:
        """The org's chain in order, from the first record."""
        seq = 0
        subject = audit_subject(org)
        while True:
            try:
                msg = await self._js.get_msg(AUDIT.name, seq=seq + 1, subject=subject, next=True)
            except NotFoundError:
                return
            seq = msg.seq
            yield _decode(msg.data)

    async def _last(self, subject: str) -> tuple[AuditRecord | None, int]:
        try:
            msg = await self._js.get_last_msg(AUDIT.name, subject, direct=True)
        except NotFoundError:
            return None, 0
        return _decode(msg.data), msg.seq
