"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers with what was there before. The ladder reads every window with
every acknowledged change in it: a ceiling lowered at once after a window opened cancels
that window, and a window just closed is not canceled again or listed as open."""

from datetime import UTC, datetime

import msgspec

from libs.contracts.ladder import PendingWindow
from services.ladder.store import Held, open_store
from tests.support import asked_again

WINDOWS = 1000  # each leaves its open window's key; a batched read answers 1,024 of them


async def test_a_window_read_as_soon_as_it_opens_or_closes_is_that_window(two_nodes):
    """Each window is opened, and the one before it stopped, then read from another node:
    the org's open windows are the new one alone, as are its person's."""
    writer, other = two_nodes
    store = await open_store(writer, replicas=3)
    elsewhere = await open_store(other, replicas=3)
    missed, before = [], None
    for i in range(WINDOWS):
        held = _window(f"acme/p{i % 20}", f"w-{i}")
        person, window_id = held.person, held.window.id
        await asked_again(store.hold, held)
        if before is not None:
            await asked_again(store.change_window, *before, _stopped)
        if await asked_again(elsewhere.open_in, "acme") != [(person, window_id)]:
            missed.append(("open_in", i))
        listed = await asked_again(elsewhere.windows, person)
        if [h.window.id for h in listed if h.window.state == "open"] != [window_id]:
            missed.append(("windows", i))
        found = await asked_again(elsewhere.held, person, window_id)
        if found is None or found.window.state != "open":
            missed.append(("held", i))
        before = (person, window_id)
    assert missed == []


def _window(person: str, window_id: str) -> Held:
    window = PendingWindow(
        id=window_id,
        org="acme",
        room="r-00000000000000a1",
        reply_to=3,
        text="on my way",
        window="1m",
        due_at=datetime(2026, 12, 3, tzinfo=UTC),
        state="open",
        notice_seq=4,
    )
    return Held(person=person, transport=None, window=window)


def _stopped(held: Held | None) -> Held | None:
    assert held is not None
    return msgspec.structs.replace(
        held, window=msgspec.structs.replace(held.window, state="stopped")
    )
