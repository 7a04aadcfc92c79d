"""A draft past its expiry is expired by whoever finds it so, before its timer: the timer
can come late (the scheduler away) or never (its fire parked after every try failed).
Before, a Keep after the expiry applied the draft, and a draft whose timer was lost held
one of its layer's sixteen places for good."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.audit.reading import records
from tests.mod.conftest import HIDE_BOARD, keep, level, refusal, version, write
from tests.personal.conftest import eventually


class Clock:
    """The mod service's clock, `ahead` of the scheduler's."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead


@pytest.fixture
def mod_clock():
    return Clock()


PAST_EXPIRY = timedelta(days=1, seconds=1)  # the drafts' default TTL is a day


async def test_a_keep_after_the_expiry_expires_the_draft_and_applies_nothing(
    api, people, mod_clock, operator
):
    await level(api, people.ada, "draft")
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    draft = (await r.json())["draft"]
    mod_clock.ahead = PAST_EXPIRY  # its expiry passed; its timer has not fired
    listed = await (await api.get("/v1/mod/drafts", headers=people.ada)).json()
    assert listed["drafts"] == []  # nothing to keep: before, listed as open

    kept = await keep(api, people.ada, draft["id"])
    assert kept.status == 409, await kept.text()  # before: 200, its ops applied
    assert await refusal(kept) == (409, "draft-closed"), await kept.text()
    assert f"draft {draft['id']} was expired" in (await kept.json())["detail"]
    assert await version(api, people.ada, "user") == 0
    found = await (await api.get(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)).json()
    assert found["state"] == "expired"
    moves = [(r.action, r.actor) for r in await records(operator.jetstream(), people.org)
             if r.target == draft["id"]]  # fmt: skip
    assert moves == [("mod.draft.create", moves[0][1]), ("mod.draft.expire", None)]


async def test_drafts_past_their_expiry_give_up_their_places(api, people, mod_clock, operator):
    await level(api, people.ada, "draft")
    for i in range(16):
        op = {"op": "rename", "kind": "apps", "id": "hanzo/chat/chat", "title": f"C{i}"}
        assert (await write(api, people.agent, "user", [op])).status == 202
    mod_clock.ahead = PAST_EXPIRY  # all sixteen lapsed, their timers not fired

    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    listed = await (await api.get("/v1/mod/drafts", headers=people.agent)).json()
    assert [d["id"] for d in listed["drafts"]] == [(await r.json())["draft"]["id"]]
    expired = [r.actor for r in await records(operator.jetstream(), people.org)
               if r.action == "mod.draft.expire"]  # fmt: skip
    assert expired == [None] * 16


async def test_a_window_end_handled_after_the_expiry_expires_the_draft(
    api, people, mod_clock, operator
):
    """The end parked while the ladder was away, say, and done again a day later."""
    await level(api, people.ada, "send", window="1m")
    mod_clock.ahead = -timedelta(seconds=57)  # the window ends three real seconds on
    r = await write(api, people.agent, "user", [HIDE_BOARD])
    assert r.status == 202, await r.text()
    draft = (await r.json())["draft"]
    mod_clock.ahead = PAST_EXPIRY  # when its end is handled, its expiry has passed

    async def settled() -> dict | None:
        found = await api.get(f"/v1/mod/drafts/{draft['id']}", headers=people.ada)
        found = await found.json()
        return found if found["state"] != "open" else None

    found = await eventually(settled, timeout=20)
    assert found["state"] == "expired"  # before: kept, a day after it should have expired
    assert await version(api, people.ada, "user") == 0
