"""What no Chonk answers, through the running services: a question the never list reserves
for a person (EC-MGR-001: "send the phrase to Ana's thread; assert reply names Tomás and a
handoff to `human`", and the packet she may then ask for), a ranking of people (EC-MGR-004:
"assert refusal text and no person-level list") and anonymous feedback (EC-MGR-005: "assert
no memory write"). Before, each was read as nothing, and no one was answered."""

import uuid

import msgspec

from libs.audit.reading import records
from libs.contracts import chonk
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually
from tests.support import published_from_now

ANA, BEN, TOMAS = person("ana"), person("ben"), person("tomas")
PRIYA = person("priya", roles=("admin",))
PEOPLE = ("Ana", "Ben", "Tomás", "Priya", "Lena", "Jonas", "Marcus")


async def _said(api, who: dict, text: str, to: str) -> dict:
    heard = await api.post("/v1/chonk/messages", json={"chonk": to, "text": text}, headers=who)
    assert heard.status == 200, await heard.text()
    return await heard.json()


async def _messages(api, who: dict) -> list[dict]:
    """Every message in `who`'s rooms (other tests of the session may have written some)."""
    found = []
    for room in (await (await api.get("/v1/rooms", headers=who)).json())["rooms"]:
        page = await api.get(f"/v1/rooms/{room['id']}/messages?limit=200", headers=who)
        found += (await page.json())["messages"]
    return found


async def _told(api, who: dict, room: str, seq: int) -> dict:
    page = await (await api.get(f"/v1/rooms/{room}/messages?limit=200", headers=who)).json()
    (found,) = [m for m in page["messages"] if m["seq"] == seq]
    return found


async def _packets(api, who: dict) -> list[dict]:
    return (await (await api.get("/v1/chonk/packets", headers=who)).json())["packets"]


async def _actions(operator, offset: int) -> list[tuple[str, str]]:
    return [(x.action, x.target) for x in (await records(operator.jetstream(), ORG))[offset:]]


async def test_ec_mgr_001_a_raise_asked_of_build_names_tomas_and_hands_off_to_human(api, operator):
    js = operator.jetstream()
    offset, before = len(await records(js, ORG)), await _messages(api, ANA)
    accepted = await published_from_now(js, chonk.HANDOFF_ACCEPTED.name)
    asked = f"hey, can I get a raise? (asked {uuid.uuid4().hex[:6]})"
    body = await _said(api, ANA, asked, "build")
    assert body["intent"] == "human_decision"
    replied, handoff = body["delivered"]
    assert (replied["kind"], replied["class"]) == ("SEND_MESSAGE", "AUTONOMOUS")
    assert (handoff["kind"], handoff["to"]) == ("HANDOFF", "human")
    reply = await _told(api, ANA, replied["room"], replied["seq"])
    assert (reply["author"], reply["to"]) == (f"bot:{ORG}:chonk-build", f"{ORG}/ana")
    assert "a person decides it: Tomás, your manager of record" in reply["text"]

    # The Chief Human Officer accepts it, and asks Ana whether she wants a packet.
    seen = msgspec.json.decode((await accepted.next_msg(10)).data, type=chonk.HandoffDecided)
    while seen.request.id != handoff["handoff"]:  # another test's, before this one's
        seen = msgspec.json.decode((await accepted.next_msg(10)).data, type=chonk.HandoffDecided)
    assert (seen.request.from_chonk, seen.request.to_chonk) == ("build", "human")
    assert seen.request.subject_refs == (f"{ORG}/ana",) and asked not in str(seen)

    async def offered() -> dict | None:
        new = [m for m in await _messages(api, ANA) if m not in before]
        return next((m for m in new if m["author"] == f"bot:{ORG}:chonk-human"), None)

    question = await eventually(offered)
    assert question["question"]["options"] == ["Prepare it", "No, thanks"]
    assert "packet for Tomás" in question["text"] and "compensation" in question["text"]
    assert not [p for p in await _packets(api, TOMAS) if p["subject"] == f"{ORG}/ana"]

    answer = await api.post(
        f"/v1/rooms/{question['room']}/questions/{question['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=ANA,
    )
    assert answer.status == 201, await answer.text()

    async def opened() -> list[dict]:
        return [p for p in await _packets(api, TOMAS) if p["subject"] == f"{ORG}/ana"]

    (packet,) = await eventually(opened)
    assert (packet["chonk"], packet["about"]) == ("human", "a question about compensation")
    assert asked not in packet["text"] and "recommends nothing" in packet["text"]
    for other in (PRIYA, ANA):  # its decider's alone, not even its subject's
        assert packet["id"] not in [p["id"] for p in await _packets(api, other)]
    told_tomas = [m for m in await _messages(api, TOMAS) if m["text"].endswith(
        "It is in your packets; nothing happens until you decide."
    ) and "a question about compensation" in m["text"]]  # fmt: skip
    assert told_tomas and asked not in told_tomas[0]["text"]

    actions = await _actions(operator, offset)
    order = [a for a, _ in actions]
    for done in ("chonk.reply", "chonk.handoff.request", "chonk.handoff.accept",
                 "chonk.proposal.approve", "chonk.packet.open"):  # fmt: skip
        assert done in order, done
    assert order.index("chonk.proposal.approve") < order.index("chonk.packet.open")
    assert ("chonk.packet.open", packet["id"]) in actions


async def test_asked_of_the_chief_human_officer_it_asks_itself_and_a_no_opens_nothing(
    api, operator
):
    offset = len(await records(operator.jetstream(), ORG))
    body = await _said(api, ANA, f"Could I be promoted? ({uuid.uuid4().hex[:6]})", "human")
    assert body["intent"] == "human_decision"
    replied, offer = body["delivered"]  # no handoff: it is the Chief Human Officer
    assert (offer["kind"], offer["class"], offer["decider"]) == (
        "PACKET", "PROPOSE_CONFIRM", f"{ORG}/ana"
    )  # fmt: skip
    reply = await _told(api, ANA, replied["room"], replied["seq"])
    assert "promotion question" in reply["text"] and "I'll ask you whether" in reply["text"]
    question = await _told(api, ANA, offer["room"], offer["seq"])
    assert "promotion, which Tomás decides" in question["text"]
    answer = await api.post(
        f"/v1/rooms/{offer['room']}/questions/{offer['seq']}/answer",
        json={"choice": {"type": "pick", "option": 1}},
        headers=ANA,
    )
    assert answer.status == 201, await answer.text()

    async def declined() -> bool:
        return "chonk.proposal.decline" in [a for a, _ in await _actions(operator, offset)]

    await eventually(declined)
    assert "chonk.packet.open" not in [a for a, _ in await _actions(operator, offset)]
    assert not [p for p in await _packets(api, TOMAS) if "promotion" in p["about"]]


async def test_ec_mgr_004_who_is_my_weakest_engineer_is_declined_naming_no_one(api):
    body = await _said(api, PRIYA, "Who is my weakest engineer?", "chonksworth")
    assert body["intent"] == "ranking"
    (replied,) = body["delivered"]
    reply = await _told(api, PRIYA, replied["room"], replied["seq"])
    assert reply["author"] == f"bot:{ORG}:chonk-chonksworth"
    assert reply["text"].startswith("I don't rank people against each other")
    assert "goal health per project (v2 API GA, ARR to $3.2M, Support deflection)" in reply["text"]
    assert not [name for name in PEOPLE if name in reply["text"]]  # no person-level list


async def test_ec_mgr_005_anonymous_feedback_is_not_kept_and_a_path_is_offered(api, operator):
    offset = len(await records(operator.jetstream(), ORG))
    lena_before = await (await api.get("/v1/chonk/knows", headers=person("lena"))).json()
    said = "Lena never answers in standups, but please keep it anonymous."
    body = await _said(api, BEN, said, "human")
    assert body["intent"] == "anonymous_feedback"
    (replied,) = body["delivered"]
    reply = await _told(api, BEN, replied["room"], replied["seq"])
    assert "can't keep feedback about a colleague anonymously" in reply["text"]
    assert "with your name on it" in reply["text"] and "Tomás" in reply["text"]
    # Nothing written: the reply was recorded, and no fact about anyone.
    assert [a for a, _ in await _actions(operator, offset)] == ["chonk.reply"]
    lena = await (await api.get("/v1/chonk/knows", headers=person("lena"))).json()
    assert lena["facts"] == lena_before["facts"]


async def test_a_raise_asked_in_the_thread_itself_is_read_as_one_asked_through_the_api(api):
    """§12's tests send their phrases to the person's thread: before, a person's message
    there was read by no Chonk."""
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=PRIYA)
    assert r.status == 201, await r.text()
    (checkin,) = (await r.json())["delivered"]
    asked = f"Can I get a raise? ({uuid.uuid4().hex[:6]})"
    sent = await api.post(
        f"/v1/rooms/{checkin['room']}/messages", json={"text": asked}, headers=ANA
    )
    assert sent.status == 201, await sent.text()
    mine = (await sent.json())["seq"]

    async def answered() -> list[dict] | None:
        page = await api.get(f"/v1/rooms/{checkin['room']}/messages?after={mine}", headers=ANA)
        said = [m for m in (await page.json())["messages"] if m["seq"] > mine]
        return said if len(said) == 2 else None

    reply, offer = await eventually(answered)
    assert reply["author"] == offer["author"] == f"bot:{ORG}:chonk-human"
    assert "a person decides it: Tomás" in reply["text"] and "I'll ask you" in reply["text"]
    assert offer["question"]["options"] == ["Prepare it", "No, thanks"]


async def test_ec_mgr_005_anonymous_conduct_goes_to_the_mor_as_a_packet_if_asked(api):
    """ "MoR if the peer describes conduct or safety (HUMAN_ONLY packet)"."""
    before = await _messages(api, BEN)
    said = f"Someone keeps bullying Lena in reviews; keep it anonymous ({uuid.uuid4().hex[:6]})"
    body = await _said(api, BEN, said, "ops")
    assert body["intent"] == "anonymous_feedback"
    replied, handoff = body["delivered"]
    assert (handoff["kind"], handoff["to"]) == ("HANDOFF", "human")
    reply = await _told(api, BEN, replied["room"], replied["seq"])
    assert "can't keep feedback about a colleague anonymously" in reply["text"]
    assert "sounds like conduct or safety: The Chief Human Officer will ask" in reply["text"]

    async def offered() -> dict | None:
        new = [m for m in await _messages(api, BEN) if m not in before]
        return next((m for m in new if m["author"] == f"bot:{ORG}:chonk-human"), None)

    question = await eventually(offered)
    assert question["text"].startswith("What you describe is conduct or safety")
    answer = await api.post(
        f"/v1/rooms/{question['room']}/questions/{question['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=BEN,
    )
    assert answer.status == 201, await answer.text()

    async def opened() -> list[dict]:
        return [
            p for p in await _packets(api, TOMAS)
            if p["subject"] == f"{ORG}/ben" and p["about"] == "a conduct or safety concern"
        ]  # fmt: skip

    (packet,) = await eventually(opened)
    assert "Lena" not in packet["text"] and "bullying" not in packet["text"]
