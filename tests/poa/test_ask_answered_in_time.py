"""A person's answer given in the room before their ask expired counts, even when the
expiry is read before the answer's event: the poa service behind (a rollout, a backlog),
or the event parked after every try. Before, the expiry denied the act, while the room
showed the person's Approve, and nothing told them it had not counted."""

from datetime import UTC, datetime, timedelta

import pytest

from libs.audit.reading import records as audit_records
from libs.contracts import poa, rooms
from services.poa.main import serve as serve_poa
from tests.personal.conftest import eventually
from tests.poa.conftest import Asker
from tests.support import published_from_now, serving


def poa_clock() -> datetime:
    """Running behind the scheduler's, so an ask of a minute lapses in seconds."""
    return datetime.now(UTC) - timedelta(seconds=57)


@pytest.fixture
async def poa_service():
    """Away unless a test brings it up (`poa_up`)."""
    yield None


@pytest.fixture
def poa_up(settings_for, audit_service, rooms_service, scheduler_service):
    return lambda: serving(poa.CONTRACT, settings_for("poa"), lambda s: serve_poa(s, poa_clock))


@pytest.fixture
async def api(client_for, gateway_settings):
    return await client_for(gateway_settings, services=(poa.CONTRACT, rooms.CONTRACT))


@pytest.mark.parametrize("choice", [{"type": "pick", "option": 0}, {"type": "decline"}])
async def test_an_answer_given_in_time_counts_when_the_expiry_is_read_first(
    api, org, operator, poa_up, choice
):
    ada = Asker.of(org)
    user, me = ada.user, ada.me
    async with poa_up():
        await ada.issue(api)
        acted = await ada.act(api)
        outcome = await acted.json()
        assert acted.status == 202, outcome
        ask = await (await api.get(f"/v1/poa/asks/{outcome['ask']}", headers=me)).json()
    # PoA away: Ada answers in the room in time; the answer's event is lost to it.
    js = operator.jetstream()
    events = await published_from_now(js, rooms.ANSWER_STORED.name)
    given = await api.post(
        f"/v1/rooms/{ask['room']}/questions/{ask['question_seq']}/answer",
        json={"choice": choice},
        headers=me,
    )
    assert given.status == 201, await given.text()
    event = await events.next_msg(timeout=10)
    await js.delete_msg(event.metadata.stream, event.metadata.sequence.stream)
    expires_at = datetime.fromisoformat(ask["expires_at"])

    async def lapsed() -> bool:
        return datetime.now(UTC) > expires_at

    await eventually(lapsed)  # its expiry fired, and waits for PoA
    async with poa_up():

        async def settled() -> dict | None:
            found = await (await api.get(f"/v1/poa/asks/{ask['id']}", headers=me)).json()
            return found if found["state"] != "open" else None

        found = await eventually(settled, timeout=30)
    approve = choice["type"] == "pick"
    expected = ("allowed", "principal_approved") if approve else ("denied", "principal_declined")
    assert (found["state"], found["decision"]["rule_id"]) == expected
    actions = [(r.action, r.actor and r.actor.sub) for r in await audit_records(js, org)
               if r.target == ask["id"]]  # fmt: skip
    assert actions == [("poa.ask.open", user), ("poa.ask.answer", user)]  # Ada's, not expired
