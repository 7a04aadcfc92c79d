"""An org's agent or bot its admin removed leaves every room it was in: made again under its
id, it is another agent, which neither lists nor reads the removed one's rooms (as no grant
of the removed one's is its, in PoA). The org's ambient agent is a member of every room of
the org by what it is, not by whom it was made as, and stays."""

from libs.contracts.agents import AgentRemoved
from services.rooms.domain import members
from services.rooms.handlers.common import Rooms

__all__ = ["Removals"]


class Removals(Rooms):
    async def agent_removed(self, removed: AgentRemoved) -> None:
        """Each room out of the agent's reach, recorded as the admin's. Delivered again, the
        rooms it has left are not found again, and those it had not are left."""
        if removed.agent == members.ambient_id(removed.org):
            return
        for room_id in await self._store.rooms_with(removed.agent):

            def record(_before: object, _after: object, room_id: str = room_id):
                return self._trail.change(
                    removed.org,
                    actor=removed.by,
                    action="rooms.member.remove",
                    target=room_id,
                    data={"member": removed.agent},
                )

            await self._store.leave(room_id, removed.agent, record)
