"""What a person chose at a confirmation and could not be sent is said to be unsent, and
they are told. Before, their pick was taken and its send refused (the correspondent had
texted STOP meanwhile, say) or parked after every try: the confirmation read as answered,
nothing was sent, and nothing told them so."""

from libs.audit.reading import records as audit_records
from libs.contracts import codec
from libs.contracts.rooms import ANSWER_STORED, MessageStored, Pick
from services.ladder.domain.confirmations import UNSENT_NOTICE
from tests.personal.conftest import eventually, history
from tests.personal.test_hip0524_09_personal_line import sms
from tests.personal.test_line_limits import ALICE, _talking


async def test_a_pick_whose_send_is_refused_is_unsent_and_the_person_told(
    api, operator, people, acks
):
    """Ada picks in the room; Alice's STOP lands before the ladder reads her answer (the
    answer's event is published here as the rooms publish it, after the STOP), so the
    room refuses what the pick sends."""
    _, room = await _talking(api, operator, people, "confirm")
    line = (await (await api.get("/v1/lines", headers=people.ada)).json())["lines"][0]
    saturday = await (await sms(api, line, ALICE, "Can I see it on Saturday?")).json()

    async def asked() -> list[dict]:
        listed = await (await api.get("/v1/confirmations", headers=people.ada)).json()
        return [c for c in listed["confirmations"] if c["reply_to"] == saturday["seq"]]

    [confirmation] = await eventually(asked)
    stop = await sms(api, line, ALICE, "Stop")
    assert stop.status == 200, await stop.text()
    answer = MessageStored(
        org=people.org,
        room=room["id"],
        seq=confirmation["question_seq"] + 100,
        author_kind="human",
        to=None,
        answerer=None,
        first_contact=False,
        transport="sms",
        answers=confirmation["question_seq"],
        choice=Pick(option=0),
    )
    js = operator.jetstream()
    for n in range(2):  # and once more, as a redelivery: told once
        await js.publish(ANSWER_STORED.name, codec.encode(answer), headers={"Nats-Msg-Id": f"a{n}"})

    async def told() -> list[dict]:
        return [m for m in await history(api, room, people.ada) if m["text"] == UNSENT_NOTICE]

    [notice] = await eventually(told)
    assert notice["reply_to"] == saturday["seq"] and notice["notice"]
    assert notice["private"] and notice["to"] == people.ada_id

    await acks.caught_up("EVENTS", "ladder")  # both read
    assert len(await told()) == 1
    # Nothing of the agent's left: the room holds no reply to Alice's question.
    said = [m for m in await history(api, room, people.ada) if not m.get("private")]
    assert [m for m in said if m.get("reply_to") == saturday["seq"]] == []
    records = await audit_records(js, people.org)
    [unsent] = [r for r in records if r.action == "ladder.confirmation.unsent"]
    assert unsent.target == confirmation["id"] and "opted out" in unsent.data["why"]
    assert await asked() == []  # answered, not waiting on her
