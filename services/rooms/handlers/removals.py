"""An org's agent or bot its admin removed leaves every room it was in: made again under its
id, it is another agent, which neither lists nor reads the removed one's rooms (as no grant
of the removed one's is its, in PoA). The org's ambient agent is a member of every room of
the org by what it is, not by whom it was made as, and stays; so is a Chonk's bot of the
rooms it shares with each person, which an org's bot made under its id before the name
was kept would take with it."""

from datetime import datetime

from libs.contracts import agents
from libs.contracts.chonk import is_chonk_bot
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from services.rooms.domain import members
from services.rooms.handlers.common import Rooms

__all__ = ["Removals"]


class Removals(Rooms):
    async def agent_removed(self, removed: agents.AgentRemoved) -> None:
        """Each room out of the agent's reach, recorded as the admin's, once the agent is
        gone (it is announced before it is deleted). Read late, after an agent was made
        again under the id, the rooms made since are that one's, and it stays in them.
        Delivered again, the rooms it has left are not found again, and those it had not
        are left."""
        if removed.agent == members.ambient_id(removed.org) or is_chonk_bot(
            removed.org, removed.agent
        ):
            return
        made_again_at = await self._made_again_at(removed)
        for room_id in await self._store.rooms_with(removed.agent):
            room = await self._store.room(room_id)
            if room is not None and not members.of_removed(room, made_again_at):
                continue

            def record(_before: object, _after: object, room_id: str = room_id):
                return self._trail.change(
                    removed.org,
                    actor=removed.by,
                    action="rooms.member.remove",
                    target=room_id,
                    data={"member": removed.agent},
                )

            await self._store.leave(room_id, removed.agent, record)

    async def _made_again_at(self, removed: agents.AgentRemoved) -> datetime | None:
        """When an agent was made again under the removed one's id, if one stands, asked
        of the agents service (`agents.made_again_at`). Without `made_at` (announced by a
        release before), none, at once."""
        if removed.made_at is None:
            return None
        standing = agents.StandingRequest(org=removed.org, id=removed.agent)
        try:
            agent = await call(self._nc, agents.STANDING, standing, caller="rooms")
        except Refused as exc:
            if exc.problem.status != 404:
                raise
            agent = None
        return agents.made_again_at(removed, agent)
