"""What every ladder handler shares: the person behind a request, the level a window is
judged by, the cancellation of windows no longer at send, and the delivery of a message
into a room (the rooms service stores it once per key)."""

import asyncio
import hashlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import rooms, scheduler
from libs.contracts.base import home_org
from libs.contracts.ladder import PendingWindow
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from libs.runtime.kv import Record
from services.ladder.domain import windows
from services.ladder.domain.levels import effective
from services.ladder.store import Held, LadderStore

__all__ = ["ME", "WINDOW_END", "Ladder", "WindowEnd", "moved", "reply_key"]

Clock = Callable[[], datetime]
ME = "ladder"
WINDOW_END = "window_end"


class WindowEnd(msgspec.Struct, frozen=True):
    """The payload of a window's timer."""

    person: str
    id: str


class Ladder:
    def __init__(self, nc: Client, store: LadderStore, trail: Trail, clock: Clock) -> None:
        self._nc, self._store, self._trail, self._clock = nc, store, trail, clock

    async def _person(self, p: Principal, what: str) -> str:
        await self._refuse_agent(p, what)
        if home_org(p.sub) is None:
            raise Refused("no-home-org", 403, f"{p.sub!r} is not a person <org>/<name>")
        return p.sub

    async def _member(self, org: str, person: str, room: str) -> None:
        """A room override names a room of the person's (an unset one may name a room they
        left: it only inherits again)."""
        me = Principal(org=org, sub=person)
        try:
            await call(self._nc, rooms.GET, rooms.RoomRef(id=room), caller=ME, principal=me)
        except Refused as exc:
            if exc.problem.status == 404:
                raise Refused("room-not-found", 404, f"you are in no room {room}") from exc
            raise

    async def _refuse_agent(self, p: Principal, what: str) -> None:
        """An agent never reaches the setting that governs it: refused, and recorded."""
        if p.is_agent:
            await self._trail.append(
                p.org, actor=p, action="ladder.agent.refused", target=p.sub, data={"tried": what}
            )
            raise Refused("agent-may-not", 403, f"an agent ({p.act}) may not {what}")

    async def _resolution(self) -> float:
        measured: scheduler.Resolution = await call(
            self._nc, scheduler.RESOLUTION, scheduler.ResolutionRequest(), caller=ME
        )
        return measured.resolution_ms

    async def _level(self, held: Held) -> str:
        settings, ceiling = await self._store.standing(held.person, held.window.org)
        return effective(settings, ceiling, held.window.room, held.transport)

    async def _cancel_below_send(self, person: str) -> int:
        open_ = [
            (person, h.window.id)
            for h in await self._store.windows(person)
            if h.window.state == "open"
        ]
        return await self._cancel_all_below_send(open_)

    async def _cancel_all_below_send(self, found: list[tuple[str, str]]) -> int:
        """Judged all at once, and all done before the caller is answered."""
        limit = asyncio.Semaphore(32)

        async def one(person: str, window_id: str) -> int:
            async with limit:
                return await self._cancel_if_below_send(person, window_id)

        return sum(await asyncio.gather(*(one(person, id_) for person, id_ in found)))

    async def _cancel_if_below_send(self, person: str, window_id: str) -> int:
        """Cancel the window if its level is no longer send; 1 if this call canceled it."""
        held = await self._store.held(person, window_id)
        if held is None or held.window.state != "open":
            return 0
        level = await self._level(held)  # the room and transport never change
        before, after = await self._store.change_window(
            person, window_id, moved(windows.lowered, level), record=self._recorded()
        )
        if before == after:
            return 0
        await self._cancel_timer(window_id)
        return 1

    async def _cancel_timer(self, window_id: str) -> None:
        """The window's state already says it will not send; this only spares the fire."""
        await call(self._nc, scheduler.CANCEL, scheduler.Cancel(key=f"w.{window_id}"), caller=ME)

    async def _deliver(self, deliver: rooms.Deliver) -> rooms.Message:
        return await call(self._nc, rooms.DELIVER, deliver, caller=ME)

    def _recorded(self, actor: Principal | None = None, **data: object) -> Record:
        """A window's move, recorded before it is written under the action its new state
        names (a lost race is marked failed and decided again)."""

        def record(_: Held | None, after: Held | None) -> AbstractAsyncContextManager[object]:
            assert after is not None
            w = after.window
            return self._trail.change(
                w.org,
                actor=actor,
                action=_ACTION[w.state],
                target=w.id,
                data={"person": after.person, "room": w.room, **data},
            )

        return record


_ACTION = {
    "sending": "ladder.window.send",
    "sent": "ladder.window.sent",
    "canceled": "ladder.window.cancel",
    "edited": "ladder.window.edited",
    "replaced": "ladder.window.replaced",
    "stopped": "ladder.window.stopped",
    "failed": "ladder.window.failed",
}


def moved(
    move: Callable[..., PendingWindow], *args: object
) -> Callable[[Held | None], Held | None]:
    """A domain move of the window, applied to the window as held (none held: nothing)."""

    def change(held: Held | None) -> Held | None:
        if held is None:
            return None
        return msgspec.structs.replace(held, window=move(held.window, *args))

    return change


def reply_key(person: str, room: str, reply_to: int) -> str:
    """One person's reply to one message has one id, so routing it again finds what it
    made."""
    return hashlib.sha256(f"{person}\0{room}\0{reply_to}".encode()).hexdigest()[:16]
