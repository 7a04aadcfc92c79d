"""An ask past its expiry takes no answer, whether or not its timer has fired yet. The
timer can come late (the scheduler away in a rollout) or never (its fire parked after
every try failed). Before, an approval through the API then allowed the act: the room
refused the answer as closed, and the 409 was taken for the room's own answer coming
first, so the yes was carried out as if it were in time."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.audit.reading import records as audit_records
from libs.contracts import poa, rooms
from tests.personal.conftest import eventually, problem
from tests.poa.conftest import Asker


class Clock:
    """PoA's clock, behind by `behind` until the test sets it right."""

    def __init__(self) -> None:
        self.behind = timedelta(seconds=57)  # a one-minute ask lapses three real seconds on

    def __call__(self) -> datetime:
        return datetime.now(UTC) - self.behind


@pytest.fixture
def poa_clock():
    return Clock()


@pytest.fixture
async def scheduler_service():
    """Away unless a test brings it up (`scheduler_up`)."""
    yield None


@pytest.fixture
async def api(client_for, gateway_settings, poa_service):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


@pytest.mark.parametrize("answer", ["approve", "decline"])
async def test_an_ask_past_its_expiry_is_denied_as_expired_and_takes_no_answer(
    api, org, operator, poa_clock, scheduler_up, answer
):
    ada = Asker.of(org)
    me = ada.me
    await ada.issue(api)
    async with scheduler_up():  # its expiry timed, then the scheduler goes away
        acted = await ada.act(api)
        outcome = await acted.json()
        assert acted.status == 202, outcome
    ask = await (await api.get(f"/v1/poa/asks/{outcome['ask']}", headers=me)).json()
    expires_at = datetime.fromisoformat(ask["expires_at"])

    async def lapsed() -> bool:
        return datetime.now(UTC) > expires_at

    await eventually(lapsed)
    poa_clock.behind = timedelta(0)  # the services agree it has lapsed; its timer is late
    listed = await (await api.get("/v1/poa/asks", headers=me)).json()
    assert listed["asks"] == []  # nothing to answer: before, listed as waiting on Ada

    late = await api.post(f"/v1/poa/asks/{ask['id']}/answer", json={"answer": answer}, headers=me)
    assert late.status == 409, await late.text()  # before: 200, and a yes allowed the act
    assert await problem(late) == (409, "ask-answered")
    assert "denied already (ask_expired)" in (await late.json())["detail"]
    found = await (await api.get(f"/v1/poa/asks/{ask['id']}", headers=me)).json()
    assert (found["state"], found["decision"]["rule_id"]) == ("denied", "ask_expired")
    # Denied as its timer would have: no one's act, and nothing charged.
    actions = [(r.action, r.actor) for r in await audit_records(operator.jetstream(), org)]
    assert ("poa.ask.expire", None) in actions
    assert "poa.act.record" not in [action for action, _ in actions]
    listed = await (await api.get("/v1/poa/asks", headers=me)).json()
    assert listed["asks"] == []
