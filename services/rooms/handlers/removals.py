"""An org's agent or bot its admin removed leaves every room it was in: made again under its
id, it is another agent, which neither lists nor reads the removed one's rooms (as no grant
of the removed one's is its, in PoA). The org's ambient agent is a member of every room of
the org by what it is, not by whom it was made as, and stays. So does a Chonk's bot: an
org's bot made under its id before the name was kept, removed, leaves none of the rooms
that Chonk shares with each person."""

from libs.contracts import agents
from libs.standing import made_again_at
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
        if members.by_what_it_is(removed.org, removed.agent):
            return
        since = await made_again_at(self._nc, removed, caller="rooms")
        for room_id in await self._store.rooms_with(removed.agent):
            if since is not None:  # a room made since is the new one's
                room = await self._store.room(room_id)
                if room is not None and not members.of_removed(room, since):
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
