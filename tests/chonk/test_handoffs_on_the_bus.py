"""§8 through the running services: a handoff is data on the bus, on the sending run's
correlation id; the receiver declines one whose condition does not hold, with its reason
(EC-MGR-007: build hands Ben to the Chief Human Officer as a people problem after two
stalls only), and two disagreements between the same Chonks go to Chonksworth's triage."""

import asyncio
import uuid

import msgspec

from libs.audit.reading import records
from libs.contracts import chonk
from tests.acks import Acks
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually
from tests.support import published_from_now

ROOT = person("priya", roles=("admin",))


async def _run(api, name: str) -> dict:
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": name}, headers=ROOT)
    assert r.status == 201, await r.text()
    return await r.json()


async def _next(sub, subject: str, about: set[str]) -> dict:
    """The next event on `subject` about one of the handoffs `about`."""
    while True:
        msg = await sub.next_msg(timeout=10)
        body = msgspec.json.decode(msg.data)
        ids = {body.get("id"), body.get("request", {}).get("id"), *body.get("handoffs", [])}
        if msg.subject == subject and ids & about:
            return body


async def _deliver_again(js, acks: Acks, request: dict) -> None:
    """The handoff `request` delivered to its receiver again, until it has handled it."""
    stored = await js.publish(chonk.HANDOFF_REQUESTED.name, msgspec.json.encode(request))
    await acks.done("chonk", stored)


async def test_ec_mgr_007_a_handoff_is_declined_on_the_bus_and_twice_goes_to_triage(
    api, operator, acks
):
    js = operator.jetstream()
    sub = await published_from_now(js, "tether.evt.chonk.>")

    first = await _run(api, "handoff_ben")
    (handoff,) = [d for d in first["delivered"] if d["kind"] == "HANDOFF"]
    assert handoff["to"] == "human"
    requested = await _next(sub, chonk.HANDOFF_REQUESTED.name, {handoff["handoff"]})
    assert (requested["fromChonk"], requested["toChonk"], requested["reason"]) == (
        "build", "human", "people_problem"
    )  # fmt: skip
    assert requested["correlationId"] == first["id"] == requested["createdByRunId"]
    assert requested["subjectRefs"] == [f"{ORG}/ben"]
    declined = await _next(sub, chonk.HANDOFF_DECLINED.name, {handoff["handoff"]})
    assert declined["accepted"] is False
    assert declined["reason"].startswith("2 stalls in 30 days and nothing said in-thread")
    # Delivered again (the receiver's replica died before it acknowledged): judged again,
    # recorded once.
    await _deliver_again(js, acks, requested)

    second = await _run(api, "handoff_ben_again")
    (again,) = [d for d in second["delivered"] if d["kind"] == "HANDOFF"]
    await _next(sub, chonk.HANDOFF_DECLINED.name, {again["handoff"]})
    triage = await _next(sub, chonk.TRIAGE_OPENED.name, {again["handoff"]})
    assert triage["pair"] == ["build", "human"]
    assert set(triage["handoffs"]) >= {handoff["handoff"], again["handoff"]}

    actions = [(x.action, x.target) for x in await records(js, ORG)]
    assert ("chonk.handoff.request", handoff["handoff"]) in actions
    assert actions.count(("chonk.handoff.decline", handoff["handoff"])) == 1


async def test_an_accepted_handoff_is_the_receivers_run_on_the_same_correlation_id(
    api, operator, acks
):
    """§8: build hands Jonas (three stalls in 30 days, the ladder through stage 2) to the
    Chief Human Officer; it takes it, and its check-in about load runs, triggered by the
    handoff on the sending run's correlation id. The work comment build proposed alongside
    is published for its connector."""
    js = operator.jetstream()
    accepted_sub = await published_from_now(js, chonk.HANDOFF_ACCEPTED.name)
    ready_sub = await published_from_now(js, chonk.ACTION_READY.name)

    sent = await _run(api, "handoff_jonas")
    (handoff,) = [d for d in sent["delivered"] if d["kind"] == "HANDOFF"]
    accepted = await _next(accepted_sub, chonk.HANDOFF_ACCEPTED.name, {handoff["handoff"]})
    assert (accepted["accepted"], accepted["reason"]) == (True, "admitted")

    ready = {}
    while ready.get("run") != sent["id"]:
        ready = msgspec.json.decode((await ready_sub.next_msg(timeout=10)).data)
    assert ready["action"]["kind"] == "CONNECTOR_WRITE:work.comment"
    assert (ready["chonk"], ready["correlation"]) == ("build", sent["id"])
    assert ready.get("approved_by") is None  # AUTONOMOUS: no one was asked

    async def reported() -> dict | None:
        r = await api.get("/v1/chonk/runs/run_checkin_jonas_load", headers=ROOT)
        return await r.json() if r.status == 200 else None

    report = await eventually(reported)
    assert (report["chonk"], report["trigger"]) == ("human", "handoff")
    assert report["correlation"] == sent["id"] == sent["correlation"]
    (told,) = report["delivered"]
    assert told["to"] == f"{ORG}/jonas"
    page = await api.get(f"/v1/rooms/{told['room']}/messages", headers=person("jonas"))
    (message,) = (await page.json())["messages"]
    assert message["text"].startswith("Hi Jonas, a quick one about load, not about any one PR")
    assert message["author"] == f"bot:{ORG}:chonk-human"

    # Delivered again: judged again, recorded once, and its run not made twice.
    await _deliver_again(js, acks, accepted["request"])
    found = await records(js, ORG)
    runs = [x for x in found if x.action == "chonk.run"]
    (receiver,) = [x for x in runs if x.target == "run_checkin_jonas_load"]
    assert receiver.data == {"chonk": "human", "trigger": "handoff", "correlation": sent["id"]}
    accepts = [
        x for x in found if (x.action, x.target) == ("chonk.handoff.accept", handoff["handoff"])
    ]
    assert len(accepts) == 1


async def test_a_handoff_delivered_twice_at_once_is_recorded_once(api, operator, acks):
    """Two deliveries of one handoff judged at once (a redelivery while the first is still
    being judged, or two replicas): one decision stands. The other's record, made before
    its write as every record is, is followed by its `.failed` when the write loses;
    before, both writes landed and the trail held two decisions."""
    js = operator.jetstream()
    # EC-MGR-007's handoff of Ben, as build sends it, under an id no one has judged.
    fresh = msgspec.to_builtins(
        chonk.HandoffRequest(
            id=f"hof_twice_{uuid.uuid4().hex[:12]}",
            tenant_id=ORG,
            from_chonk="build",
            to_chonk="human",
            reason="people_problem",
            subject_refs=(f"{ORG}/ben",),
            requested_action="a check-in about the stalls",
            receipt_id="rcp_twice",
            correlation_id="run_twice",
            created_by_run_id="run_twice",
        )
    )
    stored = await asyncio.gather(
        *(js.publish(chonk.HANDOFF_REQUESTED.name, msgspec.json.encode(fresh)) for _ in range(2))
    )
    await acks.done("chonk", *stored)
    actions = [x.action for x in await records(js, ORG) if x.target == fresh["id"]]
    made, failed = (
        actions.count("chonk.handoff.decline"),
        actions.count("chonk.handoff.decline.failed"),
    )
    assert made - failed == 1, actions
    assert set(actions) <= {"chonk.handoff.decline", "chonk.handoff.decline.failed"}
