"""Issue 10.3: what a person's agent says to the person alone (the confirmation question and
its answer, the notice before a send) is theirs alone, even in a room they share: the
correspondent's history and stream never hold the agent's text until it is sent."""

import pytest

from tests.personal.conftest import eventually, history, say, set_level
from tests.personal.test_ladder_levels import (
    _confirmation_id,
    _questions,
    _window,
    _windows,
    room,  # noqa: F401 (a fixture)
)
from tests.personal.test_stream import _events


@pytest.fixture
def ladder_clock():
    from tests.personal.conftest import behind

    return behind(57)  # a one-minute window ends three real seconds after it opens


async def _stream_until(stream, seq: int) -> list[dict]:
    """Every event of an open stream up to and including message `seq`."""
    seen: list[dict] = []
    while not seen or seen[-1]["seq"] < seq:
        [(_, data)] = await _events(stream, 1)
        seen.append(data)
    return seen


async def test_at_confirm_the_correspondent_never_sees_the_candidate_before_it_is_sent(
    api,
    people,
    room,  # noqa: F811
):
    await set_level(api, people.ada, "confirm")
    path = f"/v1/rooms/{room['id']}/messages/stream"
    async with api.get(path, headers=people.bob) as bobs_stream:
        asked = await say(api, room, people.bob, "Can you cover Friday?", to=people.ada_id)
        [question] = await eventually(lambda: _questions(api, room, people))
        candidate = question["question"]["options"][0]
        assert question["private"] is True
        before = await history(api, room, people.bob)
        assert [m["seq"] for m in before] == [asked["seq"]]
        confirmation_id = await _confirmation_id(api, people, room, question)
        picked = await api.post(
            f"/v1/confirmations/{confirmation_id}",
            json={"choice": {"type": "pick", "option": 0}},
            headers=people.ada,
        )
        sent_seq = (await picked.json())["sent_seq"]
        streamed = await _stream_until(bobs_stream, sent_seq)
    assert [m["text"] for m in streamed if candidate in m["text"]] == [candidate]
    assert streamed[-1]["seq"] == sent_seq and "question" not in streamed[-1]
    after = await history(api, room, people.bob)
    assert [m["seq"] for m in after] == [asked["seq"], sent_seq]
    mine = await history(api, room, people.ada)
    assert question["seq"] in [m["seq"] for m in mine]  # the person still has it


async def test_at_send_the_notice_is_the_persons_alone_and_a_stopped_send_never_shows(
    api,
    people,
    room,  # noqa: F811
):
    await set_level(api, people.ada, "send")
    await _window(api, people, "1m")
    path = f"/v1/rooms/{room['id']}/messages/stream"
    async with api.get(path, headers=people.bob) as bobs_stream:
        asked = await say(api, room, people.bob, "Is the report ready?", to=people.ada_id)
        [window] = await eventually(lambda: _windows(api, people))
        [notice] = [m for m in await history(api, room, people.ada) if m.get("notice")]
        assert notice["private"] is True and window["text"] in notice["text"]
        stopped = await api.post(f"/v1/windows/{window['id']}/stop", json={}, headers=people.ada)
        assert (await stopped.json())["state"] == "stopped"
        last = await say(api, room, people.bob, "Never mind.", to=people.ada_id)
        streamed = await _stream_until(bobs_stream, last["seq"])
    assert [m["seq"] for m in streamed] == [asked["seq"], last["seq"]]
    assert [m["seq"] for m in await history(api, room, people.bob)] == [asked["seq"], last["seq"]]
    assert not [m for m in streamed if window["text"] in m["text"]]
