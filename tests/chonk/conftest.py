"""The chonk service behind a gateway, the people of sim-lanternfish, and its weekly
cadence as the scheduler delivers it."""

from datetime import datetime

import msgspec
import pytest

from libs.contracts import chonk, rooms, scheduler
from libs.contracts.streams import timer_subject
from tests.personal.conftest import eventually
from tests.support import bearer, token

ORG = "sim-lanternfish"


@pytest.fixture
async def api(client_for, gateway_settings, chonk_service):
    return await client_for(gateway_settings, services=(chonk.CONTRACT, rooms.CONTRACT))


def person(name: str, **claims) -> dict[str, str]:
    return bearer(token(org=ORG, user=f"{ORG}/{name}", **claims))


def cadence_timer(due: datetime) -> str:
    return f"cadence.{ORG}.cad_owner_update.{due:%Y%m%dT%H%M}"


def owner_update(due: datetime) -> str:
    """The id of the owner update the cadence runs for `due`."""
    return f"run_owner_update_0907_{due:%Y%m%d}"


async def deliver_cadence(api, operator, due: datetime) -> None:
    """What the scheduler delivers when the owner update's time `due` comes round, once,
    and until the chonk service has handled it. The cadence is started first (a stopped
    one runs nothing)."""
    started = await api.post(
        "/v1/chonk/cadences",
        json={"tenant": ORG, "cadence": "cad_owner_update"},
        headers=person("priya", roles=("admin",)),
    )
    assert started.status == 201, await started.text()
    await fire_cadence(operator, due)


async def fire_cadence(operator, due: datetime) -> None:
    """The scheduler's delivery alone, and until the chonk service has handled it."""
    fired = scheduler.Fired(
        owner="chonk", key=cadence_timer(due), target="cadence", due_at=due, fired_at=due,
        late_ms=0.0, payload={"org": ORG, "cadence": "cad_owner_update"},
    )  # fmt: skip
    js = operator.jetstream()
    stored = await js.publish(timer_subject("chonk", "cadence"), msgspec.json.encode(fired))

    async def handled() -> bool:
        return (await js.consumer_info(stored.stream, "chonk")).ack_floor.stream_seq >= stored.seq

    await eventually(handled)


async def report_of(api, run_id: str) -> dict | None:
    found = await api.get(f"/v1/chonk/runs/{run_id}", headers=person("priya", roles=("admin",)))
    return await found.json() if found.status == 200 else None
