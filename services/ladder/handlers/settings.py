"""The person's own settings: their ladder, their window, and the org's ceiling (an
admin's), and the decision for one reply read from them (hip-0524 §4, §8, §9)."""

import asyncio

import msgspec

from libs.contracts import ladder
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.kv import Record
from services.ladder.domain import windows
from services.ladder.domain.decide import decide
from services.ladder.domain.levels import change, decided_by, effective
from services.ladder.handlers.common import Ladder

__all__ = ["Settings"]


class Settings(Ladder):
    async def get(self, _: ladder.GetLadder, p: Principal) -> ladder.MyLadder:
        person = await self._person(p, "read the ladder")
        (settings, ceiling), resolution = await asyncio.gather(
            self._store.standing(person, p.org), self._resolution()
        )
        return ladder.MyLadder(
            settings=settings,
            ceiling=ceiling,
            offered_windows=windows.offered(resolution),
            resolution_ms=resolution,
            send_means=ladder.SEND_MEANS,
        )

    async def change(self, req: ladder.ChangeLevel, p: Principal) -> ladder.LadderChanged:
        person = await self._person(p, "change the ladder")
        if req.scope == "room" and req.level is not None and req.target is not None:
            await self._member(p.org, person, req.target)
        data = {"scope": req.scope, "target": req.target, "level": req.level}
        _, after = await self._store.change_settings(
            person,
            lambda before: change(before, req),
            record=self._recording(p, "ladder.level.change", person, data),
        )
        # Every open window is judged again under the new settings, before answering.
        canceled = await self._cancel_below_send(person)
        return ladder.LadderChanged(settings=after, canceled_windows=canceled)

    async def window(self, req: ladder.ChangeWindow, p: Principal) -> ladder.LadderChanged:
        person = await self._person(p, "choose the window")
        offered = [o.window for o in windows.offered(await self._resolution())]
        if req.window not in offered:
            raise Refused(
                "window-not-offered",
                422,
                f"{req.window} is shorter than the timers' resolution; offered: "
                f"{', '.join(offered)}",
            )
        _, after = await self._store.change_settings(
            person,
            lambda before: msgspec.structs.replace(before, window=req.window),
            record=self._recording(p, "ladder.window.change", person, {"window": req.window}),
        )
        return ladder.LadderChanged(settings=after, canceled_windows=0)

    def _recording(self, p: Principal, action: str, target: str, data: dict[str, object]) -> Record:
        return lambda _before, _after: self._trail.change(
            p.org, actor=p, action=action, target=target, data=data
        )

    async def ceiling(self, req: ladder.SetCeiling, p: Principal) -> ladder.Ceiling:
        """An admin sets the ceiling or lifts it (null). Lifting raises no one; lowering
        cancels, before answering, every open window of the org no longer at send."""
        await self._refuse_agent(p, "set the ceiling")
        if "admin" not in p.roles:
            raise Refused("admin-only", 403, f"only an admin of {p.org} sets its ceiling")
        await self._store.change_ceiling(
            p.org,
            req.level,
            record=lambda before, _: self._trail.change(
                p.org,
                actor=p,
                action="ladder.ceiling.set",
                target=p.org,
                data={"level": req.level, "before": before},
            ),
        )
        found = await self._store.open_in(p.org) if req.level not in (None, "send") else []
        canceled = await self._cancel_all_below_send(found)
        return ladder.Ceiling(org=p.org, level=req.level, canceled_windows=canceled)

    async def applies(self, req: ladder.WhatApplies, p: Principal) -> ladder.Applies:
        """hip-0524 §4's resolution, said: which setting decided the level here."""
        person = await self._person(p, "read the ladder")
        if req.room is not None:
            await self._member(p.org, person, req.room)
        settings, ceiling = await self._store.standing(person, p.org)
        level, source = decided_by(settings, ceiling, req.room, req.transport)
        return ladder.Applies(level=level, window=settings.window, decided_by=source)

    async def level_of(self, req: ladder.LevelOf, _: Principal) -> ladder.Effective:
        settings, ceiling = await self._store.standing(req.person, req.org)
        level = effective(settings, ceiling, None, None)
        return ladder.Effective(level=level, window=settings.window, ceiling=ceiling)

    async def decide(self, req: ladder.DecideRequest, _: Principal) -> ladder.Decided:
        settings, ceiling = await self._store.standing(req.person, req.org)
        level = effective(settings, ceiling, req.room, req.transport)
        return decide(
            level, settings.window, first_contact=req.first_contact, synchronous=req.synchronous
        )
