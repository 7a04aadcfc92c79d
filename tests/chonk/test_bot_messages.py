"""What the rooms let a bot's service read: a person's own message in the room they share
with its bot, raised on the bus without its words and read by one call, and nothing else
of any room (the bot's own messages, an answer, another room's, another org's)."""

import secrets
from datetime import UTC, datetime

import msgspec
import pytest

from libs.contracts import rooms
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from libs.runtime.leader import newest_seq
from services.chonk.handlers import HEARD
from services.rooms.domain import members, messages
from tests.chonk.conftest import ORG, person
from tests.support import published_from_now

ANA, PRIYA = person("ana"), person("priya", roles=("admin",))


async def test_a_persons_message_to_a_bot_is_raised_without_its_words_and_read_once_asked(
    api, operator, connect
):
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=PRIYA)
    assert r.status == 201, await r.text()
    (checkin,) = (await r.json())["delivered"]
    raised = await published_from_now(operator.jetstream(), rooms.BOT_MESSAGE.name)
    words = "Thanks, lunch at 12:30 works."
    sent = await api.post(
        f"/v1/rooms/{checkin['room']}/messages", json={"text": words}, headers=ANA
    )
    assert sent.status == 201, await sent.text()
    seq = (await sent.json())["seq"]

    seen = msgspec.json.decode((await raised.next_msg(10)).data, type=rooms.BotMessage)
    assert seen == rooms.BotMessage(
        org=ORG, room=checkin["room"], seq=seq, author=f"{ORG}/ana", bot=f"bot:{ORG}:chonk-human"
    )

    def ref(room: str, at: int, org: str = ORG) -> rooms.BotMessageRef:
        return rooms.BotMessageRef(org=org, room=room, seq=at)

    async with connect("chonk") as nc:
        read = await call(nc, rooms.BOT_MESSAGE_READ, ref(checkin["room"], seq), caller="chonk")
        assert (read.text, read.author) == (words, f"{ORG}/ana")
        for refused in (
            ref(checkin["room"], checkin["seq"]),  # the bot's own
            ref(checkin["room"], seq, org="acme"),  # named under another org
        ):
            with pytest.raises(Refused) as exc:
                await call(nc, rooms.BOT_MESSAGE_READ, refused, caller="chonk")
            assert exc.value.problem.status == 404, refused


def test_only_a_persons_own_message_in_the_room_they_share_with_a_bot_alone_is_raised():
    now = datetime.now(UTC)
    shared = members.bot_room(
        ORG, f"{ORG}/ana", f"bot:{ORG}:chonk-human", "Chief Human Officer", now
    )
    said = rooms.Message(
        seq=7, room=shared.id, author=f"{ORG}/ana", author_kind="human", text="hi", at=now
    )
    assert messages.to_bot(shared, said) is not None
    ben = rooms.Member(kind="human", id=f"{ORG}/ben")
    team = msgspec.structs.replace(shared, members=(shared.members[0], ben))
    with_bot = msgspec.structs.replace(shared, members=(*shared.members, ben))
    answer = msgspec.structs.replace(said, answers=3)
    private = msgspec.structs.replace(said, private=True, to=f"{ORG}/ana")
    bots = msgspec.structs.replace(said, author=shared.members[1].id, author_kind="bot")
    assert messages.to_bot(team, said) is None  # a room no bot shares
    assert messages.to_bot(with_bot, said) is None  # said to the others, not to the bot
    for unraised in (answer, private, bots):
        assert messages.to_bot(shared, unraised) is None, unraised


async def test_words_written_through_the_api_are_the_persons_in_the_thread_each_time(
    api, operator, acks
):
    """`POST /v1/chonk/messages` stores what the person said in their thread with the Chonk,
    as theirs, before its answer: before, the thread held the answer alone. The rooms raise
    nothing for it to read again. Each request is a message, as a room's own send is (the
    same words said again were stored once, and the thread showed them said once), and one
    sent again under its Idempotency-Key is the one it was; what the Chonk does for the
    same words is done once, its answer given once."""
    js = operator.jetstream()
    raised_before = await newest_seq(js, "EVENTS", rooms.BOT_MESSAGE.name)
    heard = HEARD.labels("human", "ranking")._value.get()
    words = f"Who is the weakest engineer on the team? ({secrets.token_hex(3)})"
    keyed = {**ANA, "Idempotency-Key": f"k-{secrets.token_hex(6)}"}
    answers = []
    for headers in (ANA, ANA, keyed, keyed):
        said = {"chonk": "human", "text": words}
        r = await api.post("/v1/chonk/messages", json=said, headers=headers)
        assert r.status == 200, await r.text()
        body = await r.json()
        assert body["intent"] == "ranking"
        answers.append(body["delivered"][0])
    assert answers[0] == answers[1] == answers[2] == answers[3]
    room, answered_at = answers[0]["room"], answers[0]["seq"]
    page = await (await api.get(f"/v1/rooms/{room}/messages?limit=200", headers=ANA)).json()
    said_as = [m for m in page["messages"] if m["text"] == words]
    assert [(m["author"], m["author_kind"]) for m in said_as] == [(f"{ORG}/ana", "human")] * 3
    assert said_as[0]["seq"] < answered_at
    since = [m for m in page["messages"] if m["seq"] >= said_as[0]["seq"]]
    assert [m["seq"] for m in since if m["author"] != f"{ORG}/ana"] == [answered_at]
    await acks.caught_up("EVENTS", "chonk")
    assert await newest_seq(js, "EVENTS", rooms.BOT_MESSAGE.name) == raised_before
    assert HEARD.labels("human", "ranking")._value.get() == heard + 3  # each call, no more
