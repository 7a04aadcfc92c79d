"""A proposal waits for its decider three days, not for good. The Chonk proposed on what its
sources said when it ran; a yes weeks on carried out a message or a chase for a state long
past, and every proposal no one answered stayed held. Now its question closes after
`OPEN_FOR`, and as it closes a timer lets the proposal lapse: recorded, let go, nothing
carried out. A yes the room took in time is carried out, even if its event was not read."""

import uuid
from datetime import UTC, datetime, timedelta

import msgspec

from libs.audit.reading import records
from libs.contracts import chonk, codec, rooms
from services.chonk.carrying import LAPSE, told
from services.chonk.main import serve as serve_chonk
from services.chonk.store import Proposal
from tests.chonk.conftest import ORG, answered, fire, person, said_to, stopped
from tests.personal.conftest import eventually, problem
from tests.support import published_from_now, serving


async def _proposed(operator, closes_at: datetime) -> tuple[str, str, Proposal, dict]:
    """A proposal held as the Chonk holds one, to tell someone of this test's alone, under
    a question asked of a decider of its own: (decider, recipient, proposal, question)."""
    mark = uuid.uuid4().hex[:8]
    decider, recipient = f"{ORG}/decider-{mark}", f"{ORG}/recipient-{mark}"
    key = f"run_lapse_{mark}-0"
    tell = told(ORG, "build", "Chief Build Officer", recipient, f"A nudge on #{mark}.", key)
    held = Proposal(key=key, decider=decider, tell=tell)
    question = msgspec.structs.replace(
        told(ORG, "build", "Chief Build Officer", decider, "Send it?", f"propose-{key}",
             ("Send it", "Don't send")),
        closes_at=closes_at,
    )  # fmt: skip
    reply = await operator.request(
        rooms.TELL.published_by("chonk"), codec.encode(question), timeout=10
    )
    asked = msgspec.json.decode(reply.data)
    kv = await operator.jetstream().key_value("chonk-runs")
    await kv.create(f"proposed.{asked['room']}.{asked['seq']}", codec.encode(held))
    return decider, recipient, held, asked


async def _lapse(operator, asked: dict, due: datetime) -> tuple:
    payload = {"room": asked["room"], "seq": asked["seq"]}
    return await fire(operator, f"proposal.lapse-{asked['seq']}", LAPSE, due, payload)


async def _yes_unread(api, operator, chonk_service, decider: str, asked: dict) -> tuple:
    """The decider's yes, given in time, with the chonk service stopped: the JetStream
    context and the answer's event, which no Chonk has read."""
    js = operator.jetstream()
    await stopped(operator, chonk_service, chonk.REPORT.name)
    events = await published_from_now(js, rooms.ANSWER_STORED.name)
    yes = await api.post(
        f"/v1/rooms/{asked['room']}/questions/{asked['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=person(decider.split("/")[1]),
    )
    assert yes.status == 201, await yes.text()
    return js, await events.next_msg(timeout=10)


async def test_an_unanswered_proposal_lapses_and_a_late_yes_carries_out_nothing(
    api, operator, acks
):
    closed = datetime.now(UTC) - timedelta(seconds=1)
    decider, recipient, held, asked = await _proposed(operator, closed)
    yes = await api.post(
        f"/v1/rooms/{asked['room']}/questions/{asked['seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=person(decider.split("/")[1]),
    )
    assert await problem(yes) == (409, "question-closed")

    js, _ = await _lapse(operator, asked, closed)
    subject = f"$KV.chonk-runs.proposed.{asked['room']}.{asked['seq']}"

    async def let_go() -> bool:
        last = await js.get_last_msg("KV_chonk-runs", subject)
        return (last.headers or {}).get("KV-Operation") == "PURGE"

    # What the lapse did, waited for as such, then checked.
    await eventually(let_go)
    trail = await records(js, ORG)
    [lapsed] = [r for r in trail if r.action == "chonk.proposal.lapse"]
    assert (lapsed.target, lapsed.actor) == (held.key, None)

    # An answer read after it (a yes the rooms took before it closed, its event late)
    # finds nothing held: nothing is told the recipient.
    _, event = await answered(operator, ORG, asked["room"], asked["seq"])
    await acks.done("chonk", event)
    assert await said_to(api, person(recipient.split("/")[1])) == []
    assert not [r for r in await records(js, ORG) if r.action == "chonk.proposal.approve"
                and r.target == held.key]  # fmt: skip


async def test_a_yes_given_in_time_whose_event_was_not_read_is_carried_out_as_it_closes(
    api, operator, chonk_service, settings_for
):
    decider, recipient, held, asked = await _proposed(
        operator, datetime.now(UTC) + timedelta(days=3)
    )
    js, event = await _yes_unread(api, operator, chonk_service, decider, asked)
    await js.delete_msg(event.metadata.stream, event.metadata.sequence.stream)
    async with serving(chonk.CONTRACT, settings_for("chonk"), serve_chonk):
        await _lapse(operator, asked, datetime.now(UTC))

        async def told_recipient() -> list[dict]:
            return await said_to(api, person(recipient.split("/")[1]))

        # A chonk service started afresh, under a whole run's load: 10 s was once too
        # short (a fresh `make test`); 30 s as its siblings in test_cover_told_again.
        [message] = await eventually(told_recipient, timeout=30)
        assert message["text"] == held.tell.text
    actions = {(r.action, r.target) for r in await records(js, ORG)}
    assert ("chonk.proposal.approve", held.key) in actions
    assert ("chonk.proposal.lapse", held.key) not in actions


async def test_a_yes_carried_out_by_its_event_and_its_lapse_at_once_is_recorded_once(
    api, operator, chonk_service, settings_for, acks
):
    """The answer's event and the lapse's timer, read at the same moment (and the event
    delivered again, as after a failure), each find the proposal held and carry out the
    yes: the recipient is told once, and the trail says it was approved once."""
    decider, recipient, held, asked = await _proposed(
        operator, datetime.now(UTC) + timedelta(days=3)
    )
    js, event = await _yes_unread(api, operator, chonk_service, decider, asked)
    again = await js.publish(event.subject, event.data)
    _, fired = await _lapse(operator, asked, datetime.now(UTC))
    async with serving(chonk.CONTRACT, settings_for("chonk"), serve_chonk):
        for stored in (again, fired):
            await acks.done("chonk", stored)
    [message] = await said_to(api, person(recipient.split("/")[1]))
    assert message["text"] == held.tell.text
    approved = [
        r for r in await records(js, ORG)
        if r.action == "chonk.proposal.approve" and r.target == held.key
    ]  # fmt: skip
    assert len(approved) == 1, approved
