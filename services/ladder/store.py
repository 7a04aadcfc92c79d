"""The ladder's bucket, and the nudge for a person's pending list whenever a window or a
confirmation of theirs changes. Everything of a person's is keyed by the person:

    settings.<person>            their ladder
    window.<person>.<id>         a send waiting out its window
    confirm.<person>.<id>        a confirmation asked of them
and, to find those from elsewhere:
    ceiling.<org>                the org's ceiling
    open.<org>.<person>.<id>     an open window in a room of that org (a ceiling cancels it)
    asked.<room>.<seq>           whose confirmation a room's question is
    unattended.<person>.<room>   the replies sent the room unattended within the hour

A settled window or confirmation (and the question that asked it) is kept a week by
default (`TETHER_SETTLED_KEPT`), to be listed among the closed and to answer a request
made again, and the server then removes it: kept forever, every window a person ever had
would be read on each look at their pending list. A window leaving the open index leaves
a marker there for an hour, long enough for any replica to have applied the removal.

Every read has every acknowledged write in it (through the stream's leader on a replicated
bucket, `libs.runtime.leader`): a level just lowered, a window just opened or a stop just
made holds from the next request, whichever replica it reaches.

A window is entered in the open index before it is held, so a break between the two never
leaves one held and unindexed; one never held after all (its route failed for good) is
passed over, and the server removes its entry an hour after its window would have ended,
as it does any entry a window outlives (its end, come late, reads the level again).
"""

import contextlib
import logging
from collections.abc import Callable
from datetime import timedelta

import msgspec
from nats.aio.client import Client
from nats.js.api import KeyValueConfig
from nats.js.kv import KeyValue

from libs.contracts import codec, pending
from libs.contracts.base import key_token
from libs.contracts.ladder import LadderSettings, Level, PendingWindow
from libs.runtime.kv import (
    Conflict,
    Read,
    Record,
    open_bucket,
    put,
    remove,
    settle,
    swap,
    write_at,
)
from libs.runtime.leader import exact_reads
from libs.runtime.settings import SETTLED_KEPT
from services.ladder.domain.confirmations import Confirmation
from services.ladder.domain.levels import salvage
from services.ladder.domain.unattended import HOUR, Unattended, released
from services.ladder.domain.windows import SECONDS, UNSENT

__all__ = ["Held", "LadderStore", "open_store"]

_MARKER_KEPT = timedelta(hours=1)


class Held(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A window as held: the person and transport it was opened under, and what it shows.
    `taken_over_by` names the request that edited, replaced or stopped it (a keyed one's key
    and digest, any other's act and text digest), to answer that request again as made."""

    person: str
    transport: str | None
    window: PendingWindow
    taken_over_by: str | None = None


_log = logging.getLogger(__name__)


def _settings_of(raw: bytes) -> LadderSettings:
    """A stored value that no longer decodes loses only what cannot be read (§9)."""
    try:
        return _settings.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        salvaged, dropped = salvage(_any(raw))
        _log.warning(
            "unreadable ladder settings; dropped what cannot be read",
            extra={"dropped": dropped, "error": str(exc)},
        )
        return salvaged


def _ceiling_of(raw: bytes) -> Level | None:
    return raw.decode() or None  # type: ignore[return-value]


_settings = codec.decoder(LadderSettings)
_any = msgspec.json.Decoder().decode
_held = codec.decoder(Held)
_confirmation = codec.decoder(Confirmation)
_unattended = codec.decoder(Unattended)


class LadderStore:
    def __init__(
        self, nc: Client, kv: KeyValue, exact: Read, *, kept: timedelta = SETTLED_KEPT
    ) -> None:
        self._nc, self._kv, self._exact, self._kept = nc, kv, exact, kept

    async def standing(self, person: str, org: str) -> tuple[LadderSettings, Level | None]:
        """The person's settings and their org's ceiling, what every level is resolved
        from (hip-0524 §4), with every change acknowledged before the read in them."""
        settings_key, ceiling_key = _settings_key(person), _ceiling_key(org)
        found = {e.key: e.value for e in await self._exact(self._kv, settings_key, ceiling_key)}
        settings = found.get(settings_key)
        ceiling = found.get(ceiling_key)
        return (
            LadderSettings() if settings is None else _settings_of(settings),
            None if ceiling is None else _ceiling_of(ceiling),
        )

    async def change_settings(
        self, person: str, change: Callable[[LadderSettings], LadderSettings], *, record: Record
    ) -> tuple[LadderSettings, LadderSettings]:
        """The person's settings before and after `change`, written by compare-and-set and
        recorded only if it changed anything."""
        key = _settings_key(person)
        return await swap(
            self._kv,
            key,
            change,
            decode=_settings_of,
            default=LadderSettings(),
            record=record,
            read=self._exact,
        )

    async def change_ceiling(
        self, org: str, level: Level | None, *, record: Record
    ) -> tuple[Level | None, Level | None]:
        """Set the org's ceiling, or lift it (None, stored as nothing)."""
        key = _ceiling_key(org)
        return await swap(
            self._kv,
            key,
            lambda _: level,
            decode=_ceiling_of,
            default=None,
            write=lambda level, revision: write_at(self._kv, key, (level or "").encode(), revision),
            record=record,
            read=self._exact,
        )

    async def count_unattended(
        self, person: str, room: str, change: Callable[[Unattended], Unattended]
    ) -> Unattended:
        """The replies sent `room` unattended within the hour, after `change`, by
        compare-and-set; the server removes the key an hour after its last change."""
        _, after = await swap(
            self._kv,
            f"unattended.{key_token(person)}.{room}",
            change,
            decode=_unattended.decode,
            default=Unattended(),
            kept=lambda _: HOUR,
            read=self._exact,
        )
        return after

    async def hold(self, held: Held) -> bool:
        """True if held now; False if this window was already held. Indexed as open first:
        a window held whose index entry was lost (its replica gone between the two) was
        found held when its route came again, and left so, and an org's ceiling never
        found it. An entry for a window not held (yet) is passed over."""
        window = held.window
        kept = timedelta(seconds=SECONDS[window.window]) + _MARKER_KEPT
        key = _open_key(window.org, held.person, window.id)
        await put(self._kv, key, held.person.encode(), keep=kept)
        try:
            await write_at(self._kv, _window_key(held.person, window.id), codec.encode(held), 0)
        except Conflict:
            return False
        await self._nudge(window.org, held.person)
        return True

    async def held(self, person: str, window_id: str) -> Held | None:
        found = await self._get(_window_key(person, window_id))
        return None if found is None else _held.decode(found)

    async def windows(self, person: str) -> list[Held]:
        entries = await self._exact(self._kv, _window_key(person, "*"))
        return [_held.decode(e.value) for e in entries]

    async def open_in(self, org: str) -> list[tuple[str, str]]:
        """(person, window id) of every open window in rooms of `org`."""
        entries = await self._exact(self._kv, f"open.{org}.*.*")
        return [(e.value.decode(), e.key.rsplit(".", 1)[1]) for e in entries]

    async def change_window(
        self,
        person: str,
        window_id: str,
        change: Callable[[Held | None], Held | None],
        *,
        record: Record | None = None,
    ) -> tuple[Held | None, Held | None]:
        """The window before and after `change`, by compare-and-set; a window that closes
        leaves the org's open index, and a settled one is kept for a while."""
        before, after = await swap(
            self._kv,
            _window_key(person, window_id),
            change,
            decode=_held.decode,
            default=None,
            kept=lambda held: None if held.window.state in ("open", "sending") else self._kept,
            record=record,
            read=self._exact,
        )
        if before is not None and after is not None and after.window.state != "open":
            await remove(
                self._kv, _open_key(after.window.org, person, window_id), keep=_MARKER_KEPT
            )
            closed = after.window.state != before.window.state
            if closed and after.transport is not None and after.window.state in UNSENT:
                # Counted toward the hour's unattended sends when it opened, it never left.
                reply = window_id.removeprefix("w-")  # a window is named for its reply
                await self.count_unattended(
                    person, after.window.room, lambda hour: released(hour, reply)
                )
        if after is not None and before != after:
            await self._nudge(after.window.org, person)
        return before, after

    async def ask(self, confirmation: Confirmation) -> None:
        """The confirmation and its question's key, each made once: asked again (its reply
        routed again), what stands is left as it is, settled and expiring if answered."""
        c = confirmation
        made = (
            (_asked_key(c.room, c.question_seq), f"{c.person} {c.id}".encode()),
            (_confirm_key(c.person, c.id), codec.encode(c)),
        )
        for key, value in made:
            with contextlib.suppress(Conflict):
                await write_at(self._kv, key, value, 0)
        await self._nudge(c.org, c.person)

    async def asked(self, room: str, seq: int) -> tuple[str, str] | None:
        """(person, confirmation id) of a room's question, if the ladder asked it."""
        found = await self._get(_asked_key(room, seq))
        if found is None:
            return None
        person, _, id_ = found.decode().rpartition(" ")
        return person, id_

    async def confirmation(self, person: str, id_: str) -> Confirmation | None:
        found = await self._get(_confirm_key(person, id_))
        return None if found is None else _confirmation.decode(found)

    async def confirmations(self, person: str) -> list[Confirmation]:
        entries = await self._exact(self._kv, _confirm_key(person, "*"))
        return [_confirmation.decode(e.value) for e in entries]

    async def change_confirmation(
        self,
        person: str,
        id_: str,
        change: Callable[[Confirmation], Confirmation],
        *,
        record: Record | None = None,
    ) -> Confirmation | None:
        """The confirmation after `change`, by compare-and-set; None if there is none. One
        answered is kept for a while, and so is the question that asked it."""
        before, after = await swap(
            self._kv,
            _confirm_key(person, id_),
            lambda c: None if c is None else change(c),
            decode=_confirmation.decode,
            default=None,
            kept=lambda c: None if c.state == "open" else self._kept,
            record=record,
            read=self._exact,
        )
        if before is not None and after is not None and before.state != after.state:
            asked = _asked_key(after.room, after.question_seq)
            await settle(self._kv, asked, keep=self._kept, read=self._exact)
        if after is not None and before != after:
            await self._nudge(after.org, person)
        return after

    async def _nudge(self, org: str, person: str) -> None:
        await self._nc.publish(pending.changed("ladder", org, key_token(person)), b"")

    async def _get(self, key: str) -> bytes | None:
        found = await self._exact(self._kv, key)
        return (found[0].value or b"") if found else None


async def open_store(
    nc: Client, *, replicas: int = 1, kept: timedelta = SETTLED_KEPT
) -> LadderStore:
    config = KeyValueConfig(bucket="ladder", history=4, replicas=replicas)
    kv = await open_bucket(nc.jetstream(), config)
    return LadderStore(nc, kv, await exact_reads(kv), kept=kept)


def _settings_key(person: str) -> str:
    return f"settings.{key_token(person)}"


def _ceiling_key(org: str) -> str:
    return f"ceiling.{org}"


def _window_key(person: str, window_id: str) -> str:
    return f"window.{key_token(person)}.{window_id}"


def _open_key(org: str, person: str, window_id: str) -> str:
    return f"open.{org}.{key_token(person)}.{window_id}"


def _confirm_key(person: str, id_: str) -> str:
    return f"confirm.{key_token(person)}.{id_}"


def _asked_key(room: str, seq: int) -> str:
    return f"asked.{room}.{seq}"
