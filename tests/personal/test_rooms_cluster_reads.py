"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers that the key is not there. A room just made is found through
each member's way in from another node at once, and listed among their rooms: never a 404
for a room that exists. A message just stored is found by its seq and ends the history's
last page (and the first message of a room is its first page: a line's first contact)."""

from datetime import UTC, datetime

from libs.contracts.rooms import Member, Message, Room
from services.rooms.store import open_store
from tests.support import asked_again

ROOMS = 1000


async def test_a_room_read_as_soon_as_it_is_made_is_found(two_nodes):
    writer, other = two_nodes
    store = await open_store(writer, replicas=3)
    elsewhere = await open_store(other, replicas=3)
    missed = []
    for i in range(ROOMS):
        room = _room(f"r-{i:016x}", member=f"acme/p{i % 20}")
        assert await asked_again(store.create_room, room)
        if await asked_again(elsewhere.room, room.id) != room:
            missed.append(("room", i))
        if await asked_again(elsewhere.room_of, "acme/ada", room.id) != room:
            missed.append(("room_of", i))
        listed, _ = await asked_again(_rooms_of, elsewhere, room.members[1].id)
        if room not in listed:
            missed.append(("rooms_of", i))
    assert missed == []
    assert await elsewhere.room_of("acme/bob", room.id) is None  # not a member
    assert await elsewhere.room("r-never-made") is None


async def test_a_message_read_as_soon_as_it_is_stored_is_found(two_nodes):
    writer, other = two_nodes
    store = await open_store(writer, replicas=3)
    elsewhere = await open_store(other, replicas=3)
    missed = []
    for i in range(ROOMS):
        room = _room(f"r-{ROOMS + i:016x}", member="acme/bob")  # not the test's above
        assert await asked_again(store.create_room, room)
        said = Message(
            seq=0,
            room=room.id,
            at=datetime(2026, 12, 3, tzinfo=UTC),
            author="acme/ada",
            author_kind="human",
            text=f"hello {i}",
        )
        stored, _ = await asked_again(store.append, "acme", said)
        assert stored is not None
        if await asked_again(elsewhere.message, "acme", room.id, stored.seq) != stored:
            missed.append(("message", i))
        if await asked_again(elsewhere.page, "acme", room.id, 0, 1) != ([stored], False):
            missed.append(("first page", i))
    assert missed == []


def _rooms_of(store, member: str):
    return store.rooms_of(member, after=None, limit=200)


def _room(room_id: str, *, member: str) -> Room:
    return Room(
        id=room_id,
        org="acme",
        scope="org",
        title="team",
        members=(Member(kind="human", id="acme/ada"), Member(kind="human", id=member)),
        created_at=datetime(2026, 12, 3, tzinfo=UTC),
    )
