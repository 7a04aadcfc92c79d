"""An agent has at most 16 asks open to its person. Each is a question in their room, a
timer and an envelope of up to 64 KiB kept until they answer; before, an agent sending act
after act that asks put a question to its person for every one, without end. Counted per
agent: one cannot fill another's places. Through the gateway, on the running poa, rooms and
scheduler services."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from libs.audit.reading import records
from libs.contracts import codec, poa, rooms
from libs.contracts.base import key_token
from services.poa.domain.open_asks import OPEN_MOST, Place
from tests.poa.conftest import purchase, root_grant, valid_now
from tests.support import bearer, token

AGENT = "urn:example:agent:a_456"


@pytest.fixture
def poa_clock():
    """The real clock, as the grant's validity and the places' ages are read on it."""
    return lambda: datetime.now(UTC)


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


@pytest.fixture
async def ada(api, org):
    user = f"{org}/ada"
    people = {
        "user": user,
        "me": bearer(token(org=org, user=user)),
        "agent": bearer(token(org=org, user=user, act=AGENT)),
    }
    issued = await api.post(
        "/v1/poa/grants", json={"grant": valid_now(root_grant(user))}, headers=people["me"]
    )
    assert issued.status == 201, await issued.text()
    return people


async def _act(api, ada, amount: int):
    """An act over the grant's per-act limit of 100: it asks."""
    return await api.post(
        "/v1/poa/grants/poa_8c21/acts", json={"envelope": purchase(amount)}, headers=ada["agent"]
    )


async def _questions(api, ada, room: str) -> list[dict]:
    page = await api.get(f"/v1/rooms/{room}/messages?limit=200", headers=ada["me"])
    return [m for m in (await page.json())["messages"] if m.get("question")]


async def test_the_seventeenth_ask_is_refused_until_the_person_answers_one(api, ada):
    asks = []
    for amount in range(101, 101 + OPEN_MOST):
        response = await _act(api, ada, amount)
        assert response.status == 202, await response.text()
        asks.append((await response.json())["ask"])
    refused = await _act(api, ada, 500)
    body = await refused.json()
    assert (refused.status, body["type"]) == (409, "urn:tether:problem:asks-full")
    assert f"{AGENT} has {OPEN_MOST} asks open to {ada['user']}" in body["detail"]

    # The same act sent again is answered with its own ask, full or not.
    again = await _act(api, ada, 101)
    assert (again.status, (await again.json())["ask"]) == (202, asks[0])
    first = await (await api.get(f"/v1/poa/asks/{asks[0]}", headers=ada["me"])).json()
    assert len(await _questions(api, ada, first["room"])) == OPEN_MOST

    answered = await api.post(
        f"/v1/poa/asks/{asks[3]}/answer", json={"answer": "decline"}, headers=ada["me"]
    )
    assert answered.status == 200, await answered.text()
    taken = await _act(api, ada, 500)
    assert taken.status == 202, await taken.text()
    assert len(await _questions(api, ada, first["room"])) == OPEN_MOST + 1
    assert (await _act(api, ada, 501)).status == 409


async def test_an_act_refused_for_full_asks_is_recorded_as_refused(api, ada, org, operator):
    """Decided ASK_USER, then refused with its agent's asks full: the trail says its
    person was never asked. Before, it read as any other ASK_USER, as if they were."""
    for amount in range(101, 101 + OPEN_MOST):
        assert (await _act(api, ada, amount)).status == 202
    assert (await _act(api, ada, 500)).status == 409

    trail = await records(operator.jetstream(), org)
    acts = [r for r in trail if r.action.startswith("poa.act.") or r.action == "poa.ask.open"]
    assert [r.action for r in acts[-3:]] == ["poa.ask.open", "poa.act.decide", "poa.act.refuse"]
    decided, refused = acts[-2].data, acts[-1].data
    assert refused == {**decided, "refused": "asks-full"}
    assert (acts[-1].target, acts[-1].actor.act) == ("poa_8c21", AGENT)


async def test_acts_at_once_take_the_last_places_once(api, ada):
    responses = await asyncio.gather(*(_act(api, ada, 101 + n) for n in range(OPEN_MOST + 6)))
    statuses = sorted(r.status for r in responses)
    assert statuses == [202] * OPEN_MOST + [409] * 6
    listed = await (await api.get("/v1/poa/asks", headers=ada["me"])).json()
    assert len(listed["asks"]) == OPEN_MOST


async def test_a_place_a_dying_replica_left_is_taken_back(api, ada, org, operator):
    """Places held for asks never stored, as a replica that died between holding a place
    and storing its ask leaves them: the next act takes one back once it is a minute old,
    never sooner."""
    kv = await operator.jetstream().key_value("poa-asks")
    key = f"_open.{org}.{key_token(ada['user'])}.{key_token(AGENT)}"
    now = datetime.now(UTC)
    lost = [Place(f"ask_lost{n}", now - timedelta(minutes=2)) for n in range(OPEN_MOST)]
    await kv.put(key, codec.encode(lost))
    taken = await _act(api, ada, 101)
    assert taken.status == 202, await taken.text()

    fresh = [Place(f"ask_new{n}", now) for n in range(OPEN_MOST)]
    await kv.put(key, codec.encode(fresh))
    refused = await _act(api, ada, 102)
    assert refused.status == 409, await refused.text()


async def test_one_agent_with_its_places_full_leaves_another_its_own(api, ada, org):
    """A delegate Ada granted fills its sixteen places; her other agent still asks."""
    other = "urn:example:agent:b_789"
    grant = valid_now(root_grant(ada["user"]))
    grant["grant_id"], grant["delegate"]["sub"] = "poa_9d32", other
    issued = await api.post("/v1/poa/grants", json={"grant": grant}, headers=ada["me"])
    assert issued.status == 201, await issued.text()
    for amount in range(101, 101 + OPEN_MOST):
        assert (await _act(api, ada, amount)).status == 202
    assert (await _act(api, ada, 500)).status == 409
    asks = await api.post(
        "/v1/poa/grants/poa_9d32/acts",
        json={"envelope": purchase(140, actor=other)},
        headers=bearer(token(org=org, user=ada["user"], act=other)),
    )
    assert asks.status == 202, await asks.text()


async def test_a_revoked_grant_leaves_no_ask_open(api, ada, org, operator):
    """Ada revokes the grant her agent filled its places with: each ask is denied at once
    (V4's `revoked`, what her yes would now meet), its question answered Decline, and her
    agent asks again under the grant she issues next. Before, each stayed open, in her
    pending list and holding its place, until it expired a day later."""
    asks = []
    for amount in range(101, 101 + OPEN_MOST):
        response = await _act(api, ada, amount)
        assert response.status == 202, await response.text()
        asks.append((await response.json())["ask"])
    assert (await _act(api, ada, 500)).status == 409

    revoked = await api.post("/v1/poa/grants/poa_8c21/revoke", json={}, headers=ada["me"])
    assert revoked.status == 200, await revoked.text()

    pending = await (await api.get("/v1/poa/asks", headers=ada["me"])).json()
    assert pending["asks"] == []
    for ask_id in asks:
        ask = await (await api.get(f"/v1/poa/asks/{ask_id}", headers=ada["agent"])).json()
        assert (ask["state"], ask["decision"]["rule_id"]) == ("denied", "revoked"), ask
    first = await (await api.get(f"/v1/poa/asks/{asks[0]}", headers=ada["me"])).json()
    questions = await _questions(api, ada, first["room"])
    approve = await api.post(
        f"/v1/rooms/{first['room']}/questions/{first['question_seq']}/answer",
        json={"choice": {"type": "pick", "option": 0}},
        headers=ada["me"],
    )
    assert approve.status == 409, await approve.text()  # her revocation answered it
    page = await api.get(f"/v1/rooms/{first['room']}/messages?limit=200", headers=ada["me"])
    answered = {m["answers"] for m in (await page.json())["messages"] if m.get("answers")}
    assert answered == {q["seq"] for q in questions}

    found = await records(operator.jetstream(), org)
    by_ada = [r for r in found if r.action == "poa.ask.revoke" and r.actor.sub == ada["user"]]
    assert sorted(r.target for r in by_ada) == sorted(asks)

    grant = valid_now(root_grant(ada["user"]))
    grant["grant_id"] = "poa_9d32"
    issued = await api.post("/v1/poa/grants", json={"grant": grant}, headers=ada["me"])
    assert issued.status == 201, await issued.text()
    again = await api.post(
        "/v1/poa/grants/poa_9d32/acts", json={"envelope": purchase(500)}, headers=ada["agent"]
    )
    assert again.status == 202, await again.text()


async def test_acts_racing_a_revocation_leave_no_ask_open(api, ada):
    """An act decided before the revocation stores its ask after it, where the revocation
    may not see it: the ask reads its grant again once stored, and is denied there."""
    acts = [_act(api, ada, 101 + n) for n in range(8)]
    revoke = api.post("/v1/poa/grants/poa_8c21/revoke", json={}, headers=ada["me"])
    *responses, revoked = await asyncio.gather(*acts, revoke)
    assert revoked.status == 200, await revoked.text()
    assert all(r.status in (202, 403) for r in responses), [r.status for r in responses]
    pending = await (await api.get("/v1/poa/asks", headers=ada["me"])).json()
    assert pending["asks"] == []
