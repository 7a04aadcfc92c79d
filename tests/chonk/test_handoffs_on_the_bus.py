"""§8 through the running services: a handoff is data on the bus, on the sending run's
correlation id; the receiver declines one whose condition does not hold, with its reason
(EC-MGR-007: build hands Ben to the Chief Human Officer as a people problem after two
stalls only), and two disagreements between the same Chonks go to Chonksworth's triage."""

import msgspec

from libs.audit.reading import records
from libs.contracts import chonk
from tests.chonk.conftest import ORG, person

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


async def test_ec_mgr_007_a_handoff_is_declined_on_the_bus_and_twice_goes_to_triage(api, operator):
    js = operator.jetstream()
    sub = await js.subscribe("tether.evt.chonk.>", ordered_consumer=True)

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

    second = await _run(api, "handoff_ben_again")
    (again,) = [d for d in second["delivered"] if d["kind"] == "HANDOFF"]
    await _next(sub, chonk.HANDOFF_DECLINED.name, {again["handoff"]})
    triage = await _next(sub, chonk.TRIAGE_OPENED.name, {again["handoff"]})
    assert triage["pair"] == ["build", "human"]
    assert set(triage["handoffs"]) >= {handoff["handoff"], again["handoff"]}

    actions = [(x.action, x.target) for x in await records(js, ORG)]
    assert ("chonk.handoff.request", handoff["handoff"]) in actions
    assert ("chonk.handoff.decline", handoff["handoff"]) in actions
