"""RC-MGR-02's detection and containment through the running services: Ana tells the Chief
Human Officer that what it said is not true. It is counted and recorded as a review item,
and the Chonk annotates its thread with the receipt of what it last told her, offering to
correct it and pointing her to her knows page. Before, the message was read as nothing."""

import secrets

import msgspec

from libs.audit.reading import records
from libs.contracts import chonk
from libs.contracts.base import key_token
from libs.runtime.leader import newest_seq
from services.chonk.disputing import DISPUTED
from services.chonk.domain import intents
from services.chonk.handlers import HEARD
from services.chonk.main import serve as serve_chonk
from services.chonk.store import open_store
from tests.chonk.conftest import ORG, person
from tests.personal.conftest import eventually
from tests.support import serving

ROOT, ANA = person("priya", roles=("admin",)), person("ana")
NOT_SO = "That's not true, I never said that."


async def dispute_the_check_in(api) -> tuple[dict, dict]:
    """The check-in run, and Ana telling the Chief Human Officer it was not so."""
    r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": "checkin_ana"}, headers=ROOT)
    assert r.status == 201, await r.text()
    said = {"chonk": "human", "text": NOT_SO}
    heard = await api.post("/v1/chonk/messages", json=said, headers=ANA)
    assert heard.status == 200, await heard.text()
    return await r.json(), await heard.json()


async def test_a_person_who_says_a_message_was_not_true_is_shown_its_receipt(api, operator):
    before = len(await records(operator.jetstream(), ORG))
    counted = DISPUTED.labels("human")._value.get()
    heard = HEARD.labels("human", "disputed")._value.get()
    report, body = await dispute_the_check_in(api)
    (told,) = report["delivered"]
    assert body["intent"] == "disputed"
    (annotated,) = body["delivered"]
    assert (annotated["kind"], annotated["run"], annotated["room"]) == (
        "ANNOTATE", report["id"], told["room"]
    )  # fmt: skip
    page = await (await api.get(f"/v1/rooms/{told['room']}/messages?limit=200", headers=ANA)).json()
    (note,) = [m for m in page["messages"] if m["seq"] == annotated["seq"]]
    assert note["author"] == f"bot:{ORG}:chonk-human" and note["to"] == f"{ORG}/ana"
    assert "\nReceipts\n[1] GitHub" in note["text"] and "knows page" in note["text"]
    # Sent again (a client's retry), the thread is annotated once, one review item.
    said = {"chonk": "human", "text": NOT_SO}
    again = await (await api.post("/v1/chonk/messages", json=said, headers=ANA)).json()
    assert again["delivered"][0]["seq"] == annotated["seq"]
    # The owner's review item: the run says how often it was disputed, never by whom.
    read = await (await api.get(f"/v1/chonk/runs/{report['id']}", headers=ROOT)).json()
    assert read["disputed"] == 1
    listed = await (await api.get("/v1/chonk/runs", headers=ROOT)).json()
    (summary,) = [run for run in listed["runs"] if run["id"] == report["id"]]
    assert summary["disputed"] == 1 and f"{ORG}/ana" not in str(summary)

    reviews = [
        x for x in (await records(operator.jetstream(), ORG))[before:]
        if x.action == "chonk.claim.disputed"
    ]  # fmt: skip
    assert reviews and {(x.target, x.actor.sub) for x in reviews} == {(report["id"], f"{ORG}/ana")}
    assert DISPUTED.labels("human")._value.get() == counted + 2  # each said, counted
    # And over every message heard, the rate RC-MGR-02 watches.
    assert HEARD.labels("human", "disputed")._value.get() == heard + 2


async def test_what_a_run_told_a_person_is_kept_under_them_and_read_from_there(api, operator):
    """A dispute looks up the runs that told the person something by the person, never
    by reading the org's reports and keeping theirs: the run is found under Ana, and not
    under the owner who ran it and was told nothing."""
    report, body = await dispute_the_check_in(api)
    assert body["delivered"][0]["run"] == report["id"]
    js = operator.jetstream()

    async def told(sub: str) -> int:
        subject = f"$KV.chonk-runs.told.{ORG}.{key_token(sub)}.human.{report['id']}"
        return await newest_seq(js, "KV_chonk-runs", subject)

    assert await told(f"{ORG}/ana") > 0
    assert await told(f"{ORG}/priya") == 0


async def test_reports_stored_before_their_keys_are_given_them_once_at_a_start(
    operator, settings_for, audit_service
):
    """An upgrade over a kept store: a report the release before stored has no told keys
    and no line in the org's list, so no dispute or WHY of Ana's found it and the owner's
    list showed none of the runs before. A start gives every such report its keys, once
    for the bucket."""
    js = operator.jetstream()
    store = await open_store(js)
    kv = await js.key_value("chonk-runs")
    org = f"sim-kept-{secrets.token_hex(4)}"
    ana = f"{org}/ana"
    kept = chonk.RunReport(
        id="run_kept_1", chonk="human", receipt={"createdAt": "2026-09-08T13:05:00Z"},
        message="m", actions=[], prompts=[],
        memory=[], delivered=[{"to": ana, "room": "bot-0000000000000000", "seq": 1}],
    )  # fmt: skip
    await kv.put(f"{org}.{kept.id}", msgspec.json.encode(kept))  # as the release before did
    await kv.delete("indexed.reports.upto")  # as the release before left it: no mark
    assert await store.told(org, ana, "human") == [] and await store.listed(org) == []
    async with serving(chonk.CONTRACT, settings_for("chonk"), serve_chonk):
        pass  # a replica of this release started
    assert [run for run, _ in await store.told(org, ana, "human")] == [kept.id]
    assert await store.told(org, f"{org}/ben", "human") == []
    assert [(r.id, r.chonk) for r in await store.listed(org)] == [(kept.id, "human")]
    assert await store.index_reports() == 0  # marked: the next start reads what came since
    again = msgspec.structs.replace(kept, id="run_kept_2")  # a rollout's replica before
    await kv.put(f"{org}.{again.id}", msgspec.json.encode(again))
    assert await store.index_reports() == 1
    assert [r.id for r in await store.listed(org)] == [again.id, kept.id]


async def test_a_chonk_that_told_the_person_nothing_annotates_nothing(api):
    heard = await api.post(
        "/v1/chonk/messages", json={"chonk": "fin", "text": "That is wrong."}, headers=ANA
    )
    assert (await heard.json()) == {"intent": "disputed", "shift": None, "delivered": []}


def test_what_reads_as_a_dispute_and_what_does_not():
    for text in ("That's wrong", "this is not true!", "I never said that", "It was incorrect"):
        assert intents.DISPUTE.search(text), text
    for text in ("Thanks, that's right", "Is that true?", "I said I'd be late", "Wrong room?"):
        assert not intents.DISPUTE.search(text), text


async def test_a_reply_in_the_thread_disputes_the_message_it_answers(api):
    """Ben answers the chase's ask, not the Chonk's later message: the review item is the
    chase's. Before, a dispute was always of the last message told."""
    ben = person("ben")
    runs = {}
    for name in ("chase_ben", "handoff_ben"):  # the handoff's message comes last
        r = await api.post("/v1/chonk/runs", json={"tenant": ORG, "run": name}, headers=ROOT)
        assert r.status == 201, await r.text()
        runs[name] = await r.json()
    (asked,) = [d for d in runs["chase_ben"]["delivered"] if d.get("to") == f"{ORG}/ben"
                and "room" in d]  # fmt: skip
    sent = await api.post(
        f"/v1/rooms/{asked['room']}/messages",
        json={"text": "That's wrong, I reviewed it yesterday.", "reply_to": asked["seq"]},
        headers=ben,
    )
    assert sent.status == 201, await sent.text()

    async def disputed() -> dict | None:
        read = await api.get(f"/v1/chonk/runs/{runs['chase_ben']['id']}", headers=ROOT)
        report = await read.json()
        return report if report["disputed"] == 1 else None

    await eventually(disputed)
    later = await api.get(f"/v1/chonk/runs/{runs['handoff_ben']['id']}", headers=ROOT)
    assert (await later.json())["disputed"] == 0
