"""A HUMAN_ONLY packet through the running services (§2, §6.3, §9's packet for Lena): the
Chief Human Officer's packet is a decision record for Priya, who decides; she is told it
waits, not what it says; no one else reads it, and it is never memory."""

from datetime import UTC, datetime, timedelta

from libs.audit.reading import records
from libs.contracts import codec
from libs.contracts.base import key_token
from libs.contracts.chonk import Packet
from tests.chonk.conftest import ORG, person
from tests.support import bearer, token

PRIYA, LENA, BEN = person("priya", roles=("admin",)), person("lena"), person("ben")
BODY = "Compensation packet for Lena. Calibration places her feedback in the top band"


async def _packets(api, headers: dict) -> list[dict]:
    r = await api.get("/v1/chonk/packets", headers=headers)
    assert r.status == 200, await r.text()
    return (await r.json())["packets"]


async def test_a_packet_is_a_decision_record_for_priya_alone_and_never_memory(api, operator):
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "packet_lena"}, headers=PRIYA)
    assert r.status == 201, await r.text()
    report = await r.json()
    assert [(a["kind"], a["class"]) for a in report["actions"]] == [("PACKET", "HUMAN_ONLY")]
    (opened,) = report["delivered"]
    assert (opened["class"], opened["to"]) == ("HUMAN_ONLY", f"{ORG}/priya")
    assert report["memory"] == []

    (packet,) = [p for p in await _packets(api, PRIYA) if p["id"] == opened["packet"]]
    assert (packet["decider"], packet["subject"], packet["chonk"]) == (
        f"{ORG}/priya", f"{ORG}/lena", "human"
    )  # fmt: skip
    assert packet["text"].startswith(BODY)
    assert "\nReceipts\n[1] calibration-engine bands Q2, Q3; role band S3" in packet["text"]

    page = await api.get(f"/v1/rooms/{opened['room']}/messages", headers=PRIYA)
    (notice,) = [m for m in (await page.json())["messages"] if m["seq"] == opened["seq"]]
    assert "has prepared a packet for you to decide: Compensation packet for Lena" in notice["text"]
    assert "top band" not in notice["text"]

    # No one else reads it: Lena, whom it is about, Ben, and Priya's own agent.
    assert await _packets(api, LENA) == [] and await _packets(api, BEN) == []
    agent = bearer(token(org=ORG, user=f"{ORG}/priya", act=f"agent:{ORG}/priya"))
    assert (await api.get("/v1/chonk/packets", headers=agent)).status == 403

    knows = await (await api.get("/v1/chonk/knows", headers=LENA)).json()
    assert not any(BODY in f["content"] for f in knows["facts"])
    (record,) = [
        x for x in await records(operator.jetstream(), ORG)
        if x.action == "chonk.packet.open" and x.target == packet["id"]
    ]  # fmt: skip
    assert record.data == {"decider": f"{ORG}/priya", "subject": f"{ORG}/lena"}


async def test_packets_are_paged_as_they_pile_up(api, operator):
    """A cadence's run opens its packets every time it runs, and none leaves the list:
    read whole, twelve packets of 200 KB were one answer past the 2 MiB the bus carries (a
    500, `reply-too-large`). Paged, oldest first, each page within 512 KiB."""
    kv = await operator.jetstream().key_value("chonk-runs")
    decider, quinn = f"{ORG}/quinn", person("quinn")  # a decider no other test has
    opened = datetime(2026, 9, 1, tzinfo=UTC)
    ids = [f"pkt_run_checkin_{n}_0" for n in range(12)]
    for n, packet_id in enumerate(ids):
        packet = Packet(
            id=packet_id, tenant=ORG, chonk="human", decider=decider, subject=f"{ORG}/lena",
            about="a check-in", text="x" * 200_000, receipt=f"rcp_{n}", correlation=f"c{n}",
            opened_at=opened + timedelta(days=n),
        )  # fmt: skip
        await kv.put(f"packet.{ORG}.{key_token(decider)}.{packet_id}", codec.encode(packet))

    read, cursor = [], None
    while True:
        query = "" if cursor is None else f"?after={cursor}"
        r = await api.get(f"/v1/chonk/packets{query}", headers=quinn)
        assert r.status == 200, (await r.text())[:300]
        page = await r.json()
        assert 1 <= len(page["packets"]) <= 2
        read += [p["id"] for p in page["packets"]]
        if (cursor := page["next"]) is None:
            break
    assert read == ids

    two = await (await api.get("/v1/chonk/packets?limit=1", headers=quinn)).json()
    assert ([p["id"] for p in two["packets"]], two["next"]) == (ids[:1], ids[0])
    # A cursor that is none of hers pages nothing of hers.
    other = await (await api.get(f"/v1/chonk/packets?after={ids[0]}", headers=BEN)).json()
    assert other == {"packets": [], "next": None}


async def test_priya_says_she_has_decided_and_the_packet_stays_decided(api, operator):
    """Before, nothing closed a packet: it waited on its decider for good."""
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "packet_lena"}, headers=PRIYA)
    (opened,) = (await r.json())["delivered"]
    path = f"/v1/chonk/packets/{opened['packet']}/decided"
    # Only its decider, in person: Lena (whom it is about) and Priya's agent find none.
    agent = bearer(token(org=ORG, user=f"{ORG}/priya", act=f"agent:{ORG}/priya"))
    assert (await api.post(path, json={}, headers=agent)).status == 403
    refused = await api.post(path, json={}, headers=LENA)
    assert refused.status == 404 and opened["packet"] in (await refused.json())["detail"]

    decided = await api.post(path, json={}, headers=PRIYA)
    assert decided.status == 200, await decided.text()
    at = (await decided.json())["decided_at"]
    assert at is not None
    again = await api.post(path, json={}, headers=PRIYA)  # said again: as it was
    assert (await again.json())["decided_at"] == at
    opened_now = await api.get("/v1/chonk/packets?state=open", headers=PRIYA)
    assert opened["packet"] not in [p["id"] for p in (await opened_now.json())["packets"]]
    done = await api.get("/v1/chonk/packets?state=decided", headers=PRIYA)
    assert opened["packet"] in [p["id"] for p in (await done.json())["packets"]]
    (record,) = [
        x for x in await records(operator.jetstream(), ORG)
        if x.action == "chonk.packet.decide" and x.target == opened["packet"]
    ]  # fmt: skip
    assert record.actor.sub == f"{ORG}/priya"

    # The run asked again opens it as it was: decided.
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "packet_lena"}, headers=PRIYA)
    assert r.status == 201, await r.text()
    (packet,) = [p for p in await _packets(api, PRIYA) if p["id"] == opened["packet"]]
    assert packet["decided_at"] == at
