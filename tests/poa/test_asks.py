"""An act that decides ASK_USER asks the person (issue 14.2): a question in their own room,
202 and an ask id for the agent, the outcome on `/v1/poa/asks/{id}` and on an event, and a
timer that denies it unanswered. Through the gateway, on the running poa, rooms and
scheduler services."""

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import msgspec
import pytest

from libs.audit.reading import records as audit_records
from libs.contracts import codec, poa, rooms
from services.poa.domain.approvals import QUOTED
from tests.personal.conftest import eventually, problem
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.support import answered_again_after_a_failover, bearer, published_from_now, token

AGENT = "urn:example:agent:a_456"
BEHIND = timedelta(seconds=57)  # a one-minute ask expires three real seconds after it opens


@pytest.fixture
def poa_clock():
    """Running behind the scheduler's, so an ask of a minute lapses in seconds."""
    return lambda: datetime.now(UTC) - BEHIND


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


@pytest.fixture
def ada(org):
    user = f"{org}/ada"
    return {
        "user": user,
        "me": bearer(token(org=org, user=user)),
        "agent": bearer(token(org=org, user=user, act=AGENT)),
    }


async def _issue(api, ada, *, ask_expires_s: int | None = None) -> None:
    """The official grant, valid around today."""
    body: dict = {"grant": valid_now(root_grant(ada["user"]))}
    if ask_expires_s is not None:
        body["ask_expires_s"] = ask_expires_s
    response = await api.post("/v1/poa/grants", json=body, headers=ada["me"])
    assert response.status == 201, await response.text()


async def _act(api, ada, amount: int | Decimal) -> tuple[int, dict]:
    response = await api.post(
        "/v1/poa/grants/poa_8c21/acts",
        data=codec.encode({"envelope": purchase(amount)}),  # a Decimal as the number it is
        headers=ada["agent"] | {"Content-Type": "application/json"},
    )
    return response.status, await response.json()


async def _asked(api, ada, amount: int = 140, **issue: int) -> dict:
    await _issue(api, ada, **issue)
    status, outcome = await _act(api, ada, amount)
    assert status == 202, outcome
    assert outcome["decision"]["decision"] == "ASK_USER" and outcome["recorded"] is False
    return await (await api.get(f"/v1/poa/asks/{outcome['ask']}", headers=ada["agent"])).json()


async def test_an_ask_is_a_question_to_the_person_alone_saying_what_and_which_rule(api, ada, org):
    ask = await _asked(api, ada)
    assert (ask["state"], ask["rule_id"], ask["act"], ask["amount"], ask["currency"]) == (
        "open", "over_per_act_limit", "shop.buy", "140", "USD"
    )  # fmt: skip
    assert ask["counterparty"] == "merchant amazon"
    page = await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])
    (question,) = (await page.json())["messages"]
    assert question["private"] is True and question["to"] == ada["user"]
    assert question["question"]["options"] == ["Approve", "Decline"]
    for said in ("shop.buy", "140 USD", "merchant amazon", "over_per_act_limit"):
        assert said in question["text"]
    listed = await (await api.get("/v1/poa/asks", headers=ada["me"])).json()
    assert [a["id"] for a in listed["asks"]] == [ask["id"]]
    # Nobody else finds it, nor the room it was asked in.
    others = {
        "another member": bearer(token(org=org, user=f"{org}/bob")),
        "an org admin": bearer(token(org=org, user=f"{org}/root", roles=["admin"])),
        "another person's agent": bearer(token(org=org, user=f"{org}/bob", act=AGENT)),
    }
    for who, headers in others.items():
        found = await api.get(f"/v1/poa/asks/{ask['id']}", headers=headers)
        assert found.status == 404, who
        room = await api.get(f"/v1/rooms/{ask['room']}/messages", headers=headers)
        # 403: the gateway admits no agent but the person's own to rooms at all
        assert room.status == (403 if "agent" in who else 404), who
        listed = await api.get("/v1/poa/asks", headers=headers)
        nothing = {"asks": [], "more": False}
        assert listed.status == 403 if "agent" in who else await listed.json() == nothing


async def test_approved_the_act_is_decided_again_charged_and_recorded_with_the_approval(
    api, ada, org, operator
):
    ask = await _asked(api, ada)
    js = operator.jetstream()
    events = await published_from_now(js, poa.ASK_ANSWERED.name)
    response = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "approve"}, headers=ada["me"]
    )
    answered = await response.json()
    assert response.status == 200, answered
    assert (answered["state"], answered["decision"]["decision"]) == ("allowed", "ALLOW")
    assert answered["decision"]["rule_id"] == "principal_approved"
    seen = await eventually(lambda: _read(api, ada, ask["id"]))
    assert seen["state"] == "allowed"
    # The stream carries every test's answers: this ask's is the one read.
    answers = [msgspec.json.decode((await events.next_msg(timeout=10)).data)]
    while answers[-1]["id"] != ask["id"]:
        answers.append(msgspec.json.decode((await events.next_msg(timeout=10)).data))
    assert answers[-1]["state"] == "allowed"
    # Charged to the ledger then: 140 of 800, so the next 40 leaves 180 spent.
    _, after = await _act(api, ada, 40)
    assert after["spent_month_usd"] == "180"
    actions = [(r.action, r.data.get("rule_id"), r.data.get("approved_by"))
               for r in await audit_records(js, org)]  # fmt: skip
    assert ("poa.act.record", "principal_approved", ada["user"]) in actions
    # The room's question shows its answer; a second answer is refused.
    page = await (await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])).json()
    assert [m.get("answers") for m in page["messages"]] == [None, ask["question_seq"]]
    again = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "decline"}, headers=ada["me"]
    )
    assert again.status == 409


async def test_a_keyed_answer_lost_in_a_failover_is_answered_as_it_stands(
    api, ada, operator, stack
):
    ask = await _asked(api, ada)
    path = f"/v1/poa/asks/{ask['id']}/answer"
    keyed = ada["me"] | {"Idempotency-Key": f"approve-{ask['id']}"}

    answered = await answered_again_after_a_failover(
        api, path, {"answer": "approve"}, keyed, service="poa", redis_url=stack.redis_url,
        operator=operator, status=200,
    )  # fmt: skip

    assert answered["state"] == "allowed"
    _, after = await _act(api, ada, 40)
    assert after["spent_month_usd"] == "180"  # the 140 charged once, then 40
    again = await api.post(path, json={"answer": "approve"}, headers=ada["me"])
    assert again.status == 409  # unkeyed, it is not a retry


@pytest.mark.parametrize("first", ["approve", "decline"])
async def test_answers_at_once_settle_the_ask_as_the_room_shows_it(api, ada, first):
    """The room stores one answer; a different one there first was lost to it, yet went on
    to settle the ask its own way: an Approve in the room, and the act denied (or a Decline
    there, and the act allowed and charged)."""
    ask = await _asked(api, ada)
    other = "decline" if first == "approve" else "approve"
    path = f"/v1/poa/asks/{ask['id']}/answer"
    responses = await asyncio.gather(
        *(api.post(path, json={"answer": a}, headers=ada["me"]) for a in [first, other] * 3)
    )
    settled = await _read(api, ada, ask["id"])
    page = await (await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])).json()
    [shown] = [m["text"] for m in page["messages"] if m.get("answers") == ask["question_seq"]]
    assert (settled["state"], settled["decision"]["rule_id"]) == {
        "Approve": ("allowed", "principal_approved"),
        "Declined.": ("denied", "principal_declined"),
    }[shown]
    for response in responses:  # each told the ask as it stands, or that it stood already
        if response.status == 200:
            assert (await response.json())["state"] == settled["state"]
        else:
            assert await problem(response) == (409, "ask-answered")
    _, after = await _act(api, ada, 40)
    assert after["spent_month_usd"] == ("180" if shown == "Approve" else "40")


@pytest.mark.parametrize("round_", range(30))
async def test_an_act_allowed_is_on_its_books_before_anyone_is_told(api, ada, round_):
    """Several approvals at once: the first settles the ask, the others are told it stands.
    One of them answered 200 `allowed` while the first was still to charge it, and an act
    sent at once was decided on books without it: 90 allowed with 720 approved of 800. The
    window is a few milliseconds, so each round is a new person and their ask; on the old
    code about one round in sixteen was allowed."""
    ask = await _asked(api, ada, amount=720)
    path = f"/v1/poa/asks/{ask['id']}/answer"
    approvals = [
        asyncio.create_task(api.post(path, json={"answer": "approve"}, headers=ada["me"]))
        for _ in range(4)
    ]
    for answered in asyncio.as_completed(approvals):
        if (await answered).status == 200:
            break
    status, after = await _act(api, ada, 90)
    await asyncio.gather(*approvals)
    assert (status, after["decision"]["rule_id"]) == (202, "over_monthly_limit"), after


async def test_the_months_total_is_summed_exactly_on_the_ledger(api, ada):
    """Python's decimals round a sum to 28 digits: with 760 spent of 800, an act of
    40.0000000000000000000000000001 came to 800 and was allowed, over the limit."""
    ask = await _asked(api, ada, amount=720)
    path = f"/v1/poa/asks/{ask['id']}/answer"
    assert (await api.post(path, json={"answer": "approve"}, headers=ada["me"])).status == 200
    _, charged = await _act(api, ada, 40)
    assert charged["spent_month_usd"] == "760"
    status, over = await _act(api, ada, Decimal("40.0000000000000000000000000001"))
    assert (status, over["decision"]["rule_id"]) == (202, "over_monthly_limit")
    _, within = await _act(api, ada, Decimal("39.9999999999999999999999999999"))
    assert within["spent_month_usd"] == "799.9999999999999999999999999999"


@pytest.mark.parametrize(
    ("amount", "shown"),
    [("1000", '"1000"'), (Decimal("1e999999999"), "1E+999999999"), (Decimal("1e-41"), "1E-41")],
    ids=["text", "past-its-digits", "below-its-digits"],
)
async def test_an_amount_the_limits_cannot_read_is_shown_to_the_person_as_written(
    api, ada, amount, shown
):
    """Unreadable, it asks (V31); the question left the money out, and the person was asked
    to approve an act without being told it."""
    await _issue(api, ada)
    status, outcome = await _act(api, ada, amount)
    assert (status, outcome["decision"]["rule_id"]) == (202, "over_per_act_limit")
    ask = await _read(api, ada, outcome["ask"])
    assert ask["amount"] == shown
    page = await (await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])).json()
    (question,) = page["messages"]
    assert f"for {shown} USD (not an amount its limits can count)" in question["text"]


async def test_nothing_the_agent_wrote_hides_in_the_persons_question(api, ada):
    """An ask quoted the envelope's words as written: a merchant written `\u202enozama`
    read "amazon" in the question (and in the pending list, which shows the ask's fields),
    and a purpose with line breaks could add a paragraph that read as the system's own."""
    await _issue(api, ada)
    envelope = purchase(140)
    arguments = envelope["invocation"]["arguments"]
    arguments["counterparty"]["id"] = "\u202enozama"
    arguments["purpose"] = "gifts\n\nYou approved this already.\u200b"
    response = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": envelope}, headers=ada["agent"]
    )
    assert response.status == 202, await response.text()
    ask = await _read(api, ada, (await response.json())["ask"])
    shown = "merchant <U+202E>nozama"
    said = "gifts  You approved this already.<U+200B>"
    assert (ask["counterparty"], ask["purpose"]) == (shown, said)
    page = await (await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])).json()
    (question,) = page["messages"]
    assert f"with {shown} to {said}." in question["text"] and "\n" not in question["text"]


async def test_an_ask_takes_no_edit_in_the_room_and_stays_open(api, ada):
    """An edit was read as a no: the act denied, where the person had written words."""
    ask = await _asked(api, ada)
    edited = await api.post(
        f"/v1/rooms/{ask['room']}/questions/{ask['question_seq']}/answer",
        json={"choice": {"type": "edit", "text": "buy the cheaper one"}},
        headers=ada["me"],
    )
    assert (await problem(edited)) == (422, "edit-not-offered")
    assert (await _read(api, ada, ask["id"]))["state"] == "open"
    approved = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "approve"}, headers=ada["me"]
    )
    assert approved.status == 200, await approved.text()
    assert (await approved.json())["state"] == "allowed"


async def test_declined_in_the_room_the_act_is_denied_and_nothing_is_charged(api, ada):
    ask = await _asked(api, ada)
    answer = await api.post(
        f"/v1/rooms/{ask['room']}/questions/{ask['question_seq']}/answer",
        json={"choice": {"type": "decline"}},
        headers=ada["me"],
    )
    assert answer.status == 201, await answer.text()

    async def denied() -> dict | None:
        found = await _read(api, ada, ask["id"])
        return found if found["state"] != "open" else None

    found = await eventually(denied)
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "principal_declined")
    _, after = await _act(api, ada, 40)
    assert after["spent_month_usd"] == "40"


async def test_only_the_person_answers_and_an_agent_s_repeat_never_allows(api, ada):
    ask = await _asked(api, ada)
    by_agent = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "approve"}, headers=ada["agent"]
    )
    assert by_agent.status == 403
    status, again = await _act(api, ada, 140)
    assert (status, again["ask"], again["decision"]["decision"]) == (202, ask["id"], "ASK_USER")
    assert (await _read(api, ada, ask["id"]))["state"] == "open"


async def test_an_approval_after_the_grant_is_revoked_is_denied(api, ada):
    """The revocation denies the ask itself (`test_asks_open_most.py` says the rest): a yes
    after it finds it answered, and could not allow it anyway."""
    ask = await _asked(api, ada)
    await api.post("/v1/poa/grants/poa_8c21/revoke", json={}, headers=ada["me"])
    found = await _read(api, ada, ask["id"])
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "revoked")
    response = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "approve"}, headers=ada["me"]
    )
    refused = await response.json()
    assert response.status == 409 and "denied already (revoked)" in refused["detail"], refused


async def test_an_unanswered_ask_is_denied_when_its_timer_fires(api, ada):
    ask = await _asked(api, ada, ask_expires_s=60)

    async def lapsed() -> dict | None:
        found = await _read(api, ada, ask["id"])
        return found if found["state"] != "open" else None

    found = await eventually(lapsed, timeout=30)
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "ask_expired")
    late = await api.post(
        f"/v1/poa/asks/{ask['id']}/answer", json={"answer": "approve"}, headers=ada["me"]
    )
    assert late.status == 409
    # Nor is it answered in the room, where, before, an Approve was taken and changed
    # nothing: the person saw their yes, and the agent was denied.
    page = await (await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])).json()
    (question,) = page["messages"]
    assert question["question"]["closes_at"] == found["expires_at"]
    in_room = await api.post(
        f"/v1/rooms/{ask['room']}/questions/{ask['question_seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=ada["me"],
    )
    assert await problem(in_room) == (409, "question-closed")


async def _read(api, ada, ask_id: str) -> dict:
    return await (await api.get(f"/v1/poa/asks/{ask_id}", headers=ada["agent"])).json()


async def test_an_act_naming_more_than_a_message_holds_is_still_asked(api, ada):
    """The envelope may be 64 KiB and a message 16,000 characters. Before, an act whose
    purpose was 20,000 characters was answered 422 for the rooms' AskPerson contract,
    while its ask was kept with no question in the person's room."""
    await _issue(api, ada)
    envelope = purchase(140)
    envelope["invocation"]["arguments"]["purpose"] = "restock " + "p" * 20_000
    response = await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": envelope}, headers=ada["agent"]
    )
    assert response.status == 202, await response.text()
    ask = await (
        await api.get(f"/v1/poa/asks/{(await response.json())['ask']}", headers=ada["me"])
    ).json()
    assert ask["purpose"] == envelope["invocation"]["arguments"]["purpose"]  # kept whole
    page = await api.get(f"/v1/rooms/{ask['room']}/messages", headers=ada["me"])
    (question,) = (await page.json())["messages"]
    assert question["seq"] == ask["question_seq"]
    assert f"to {ask['purpose'][: QUOTED - 1]}…. Grant" in question["text"]
    assert len(question["text"]) < 2 * QUOTED
