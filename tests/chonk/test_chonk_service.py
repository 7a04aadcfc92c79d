"""The chonk service through the gateway: a run on sim-lanternfish (§10's check-in), its
report, and Ana's knows page (§6.4): the facts about her, who read them for what, and what
she may do to each (§6.2's last column, EC-MGR-006)."""

import secrets

from libs.audit.reading import records
from tests.chonk.conftest import HARBOR, ORG, person
from tests.support import bearer, token

ROOT, ANA, BEN = person("priya", roles=("admin",)), person("ana"), person("ben")


async def test_a_run_reports_its_receipt_and_the_person_reads_what_it_knows_and_who_read_it(
    api, operator
):
    # An objective run is run again, under its id, each time it is asked: another test of
    # the session may have run it already, so this one's records are those after these.
    earlier = len(await records(operator.jetstream(), ORG))
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=ROOT)
    assert r.status == 201, await r.text()
    report = await r.json()
    assert len(report["receipt"]["sources"]) == 5
    assert report["message"].startswith("Hey Ana") and "\nReceipts\n[1] GitHub" in report["message"]
    assert [(a["kind"], a["class"]) for a in report["actions"]] == [
        ("SEND_MESSAGE:ic_thread", "AUTONOMOUS")
    ]
    again = await api.get(f"/v1/chonk/runs/{report['id']}", headers=ROOT)
    assert (await again.json()) == report

    # The message is carried out: the Chief Human Officer, a bot of the tenant, tells Ana
    # in the room the two share, with its receipts; nobody else finds that room.
    (told,) = report["delivered"]
    assert (told["kind"], told["to"]) == ("SEND_MESSAGE:ic_thread", f"{ORG}/ana")
    room = await (await api.get(f"/v1/rooms/{told['room']}", headers=ANA)).json()
    assert room["title"] == "Chief Human Officer"
    page = await (await api.get(f"/v1/rooms/{told['room']}/messages", headers=ANA)).json()
    (said,) = [m for m in page["messages"] if m["seq"] == told["seq"]]  # others' tests' after
    assert (said["seq"], said["author"], said["author_kind"], said["text"]) == (
        told["seq"], f"bot:{ORG}:chonk-human", "bot", report["message"]
    )  # fmt: skip
    assert (await api.get(f"/v1/rooms/{told['room']}", headers=BEN)).status == 404

    knows = await (await api.get("/v1/chonk/knows", headers=ANA)).json()
    facts = {f["id"]: f for f in knows["facts"]}
    assert {"mem_ana_pref_brief", "mem_ana_feedback_1", *report["memory"]} <= set(facts)
    read = next(x for x in knows["reads"] if x["run"] == report["id"])
    assert (read["chonk"], read["purpose"]) == ("human", "a check-in")
    assert knows["titles"]["human"] == "Chief Human Officer"
    assert "mem_ana_pref_brief" in read["facts"]
    bens = await (await api.get("/v1/chonk/knows", headers=BEN)).json()
    assert [f for f in bens["facts"] if report["id"] in f["id"]] == []  # nothing of this run

    # This run's records, in order: the read, its two writes, then the run.
    mine = [
        (x.action, x.target) for x in (await records(operator.jetstream(), ORG))[earlier:]
        if x.data.get("run") == report["id"] or x.data.get("fact") in report["memory"]
        or x.target == report["id"]
    ]  # fmt: skip
    assert [a for a, _ in mine] == [
        "chonk.memory.read", "chonk.memory.write", "chonk.memory.write", "chonk.run"
    ]  # fmt: skip


async def test_a_person_redacts_a_preference_at_once_and_answers_feedback(api, operator):
    await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=ROOT)
    gone = await api.post("/v1/chonk/memory/mem_ana_pref_brief", json={}, headers=ANA)
    assert gone.status == 200, await gone.text()
    assert (await gone.json())["redacted"] is True and (await gone.json())["content"] == ""
    answer = {"response": "That was a release-week exception."}
    kept = await api.post("/v1/chonk/memory/mem_ana_feedback_1", json=answer, headers=ANA)
    body = await kept.json()
    assert not body.get("redacted") and body["response"] == answer["response"]
    decisions = [
        x for x in await records(operator.jetstream(), ORG) if x.action == "chonk.decision.open"
    ]
    assert decisions and decisions[-1].target == "mem_ana_feedback_1"
    not_his = await api.post("/v1/chonk/memory/mem_ana_feedback_1", json={}, headers=BEN)
    assert not_his.status == 404


async def test_an_answer_sent_again_opens_the_mors_decision_once(api, operator):
    """Before, each time the same answer was sent (a retry after a lost reply) another
    decision was opened for the MoR."""
    await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=ROOT)
    js = operator.jetstream()

    async def opened() -> int:
        return sum(
            x.action == "chonk.decision.open" and x.target == "mem_ana_feedback_1"
            for x in await records(js, ORG)
        )

    before = await opened()
    answer = {"response": f"A release-week exception ({secrets.token_hex(4)})."}
    for _ in range(2):
        sent = await api.post("/v1/chonk/memory/mem_ana_feedback_1", json=answer, headers=ANA)
        assert sent.status == 200, await sent.text()
    assert await opened() == before + 1


async def test_only_an_admin_of_the_tenant_starts_a_run(api):
    body = {"tenant": ORG, "run": "checkin_ana"}
    assert (await api.post("/v1/chonk/runs", json=body, headers=ANA)).status == 403
    elsewhere = bearer(token(org="acme", user="acme/root", roles=("admin",)))
    assert (await api.post("/v1/chonk/runs", json=body, headers=elsewhere)).status == 404
    unknown = {"tenant": ORG, "run": "nothing"}
    assert (await api.post("/v1/chonk/runs", json=unknown, headers=ROOT)).status == 404


async def test_an_admin_lists_the_orgs_runs_newest_first_and_opens_one_from_the_list(api):
    """Before, a run's report was found only by its id, which a cadence's runs (one each
    time it comes round) told no one."""
    for name in ("checkin_ana", "owner_update"):
        r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": name}, headers=ROOT)
        assert r.status == 201, await r.text()
        assert r.headers["Location"] == f"/v1/chonk/runs/{(await r.json())['id']}"
    first = await api.get("/v1/chonk/runs", params={"limit": "1"}, headers=ROOT)
    assert first.status == 200, await first.text()
    page = await first.json()
    (last,) = page["runs"]
    assert (last["id"], last["chonk"], last["title"], last["trigger"]) == (
        "run_owner_update_0907", "chonksworth", "Chief Executive Otter", "objective"
    )  # fmt: skip
    assert page["next"] == last["id"]
    after = await api.get("/v1/chonk/runs", params={"after": page["next"]}, headers=ROOT)
    rest = [run["id"] for run in (await after.json())["runs"]]
    assert rest[0] == "run_checkin_ana_0908" and last["id"] not in rest
    report = await (await api.get(f"/v1/chonk/runs/{last['id']}", headers=ROOT)).json()
    assert report["receipt"]["createdAt"].startswith(last["at"][:19])
    # The body is the message without its Receipts block; its markers name the sources.
    assert report["message"].startswith(report["body"] + "\n\nReceipts\n[1] ")
    assert "[15]" in report["body"] and "\nReceipts\n" not in report["body"]

    assert (await api.get("/v1/chonk/runs", headers=ANA)).status == 403
    harbor = bearer(token(org=HARBOR, user=f"{HARBOR}/root", roles=("admin",)))
    theirs = await (await api.get("/v1/chonk/runs", headers=harbor)).json()
    assert ORG not in str(theirs) and last["id"] not in {run["id"] for run in theirs["runs"]}
    nobody = await api.get("/v1/chonk/runs", params={"after": "run_none"}, headers=ROOT)
    assert (await nobody.json()) == {"runs": [], "next": None}


async def test_a_person_reads_which_chonks_their_org_runs_to_write_to(api):
    roster = await (await api.get("/v1/chonk/roster", headers=ANA)).json()
    titles = {c["id"]: c["title"] for c in roster["chonks"]}
    assert len(titles) == 9 and titles["human"] == "Chief Human Officer"
    elsewhere = bearer(token(org="acme", user="acme/ada"))  # no simulation tenant: none
    assert (await (await api.get("/v1/chonk/roster", headers=elsewhere)).json()) == {"chonks": []}
