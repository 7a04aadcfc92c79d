"""The chonk service behind a gateway, the people of sim-lanternfish, and its weekly
cadence as the scheduler delivers it."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from nats.errors import NoRespondersError

from libs.contracts import chonk, codec, rooms, scheduler
from libs.contracts.rooms import ANSWER_STORED, MessageStored, Pick
from libs.contracts.streams import timer_subject
from services.chonk.domain import ladder
from services.chonk.store import CallOut, Cover, Offer
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from tests.acks import Acks
from tests.personal.conftest import eventually
from tests.support import LINES_KEY, bearer, serving, token

ORG = "sim-lanternfish"
HARBOR = "sim-harbortable"  # EC-MGR-009's tenant
CADENCE_DUE = {"org": ORG, "cadence": "cad_owner_update"}  # the owner update's timer payload


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


async def deliver_cadence(api, operator, acks: Acks, due: datetime) -> None:
    """What the scheduler delivers when the owner update's time `due` comes round, once,
    and until the chonk service has handled it. The cadence is started first (a stopped
    one runs nothing)."""
    await start_cadence(api)
    await fire_cadence(operator, acks, due)


async def start_cadence(api) -> None:
    """The owner update's cadence started, by Priya, the tenant's admin."""
    started = await api.post(
        "/v1/chonk/cadences",
        json={"tenant": ORG, "cadence": "cad_owner_update"},
        headers=person("priya", roles=("admin",)),
    )
    assert started.status == 201, await started.text()


async def fire_cadence(operator, acks: Acks, due: datetime) -> None:
    """The scheduler's delivery alone, and until the chonk service has handled it."""
    _, stored = await fire(operator, cadence_timer(due), "cadence", due, CADENCE_DUE)
    await acks.done("chonk", stored)


async def fire(operator, key: str, target: str, due: datetime, payload: Any) -> tuple:
    """What the scheduler delivers when the chonk service's timer `key` comes due, now
    (late, if `due` has passed): the JetStream context and where the fire was stored."""
    now = datetime.now(UTC)
    fired = scheduler.Fired(
        owner="chonk", key=key, target=target, due_at=due, fired_at=now,
        late_ms=max(0.0, (now - due).total_seconds() * 1000), payload=payload,
    )  # fmt: skip
    js = operator.jetstream()
    return js, await js.publish(timer_subject("chonk", target), msgspec.json.encode(fired))


async def taken_back(operator, js, stored, *timers: str) -> None:
    """A fault test's fire taken back, and the timers it made cancelled: tried again while
    the rooms are away, the fire would otherwise be carried out by a later test's services
    with the rooms there."""
    await cancelled(operator, *timers)
    await js.delete_msg(stored.stream, stored.seq)


async def cancelled(operator, *timers: str) -> None:
    for key in timers:
        cancel = msgspec.json.encode(scheduler.Cancel(key=key))
        await operator.request(scheduler.CANCEL.published_by("chonk"), cancel, timeout=5)


def own_chase(name: str) -> ladder.Chase:
    """A chase of its own (a run's would be shared by every test of the session that runs
    it), of Ben's review of #419."""
    return ladder.Chase(
        org=ORG, chonk="build", title="Chief Build Officer",
        run=f"run_{name}_{uuid.uuid4().hex[:8]}", item="#419", owner=f"{ORG}/ben",
        owner_name="Ben", requester=f"{ORG}/ana", requester_name="Ana", mor=f"{ORG}/tomas",
        followup="A nudge on #419.", receipts="Receipts",
        hours=ladder.BusinessHours(zone="Europe/Stockholm"),
    )  # fmt: skip


async def report_of(api, run_id: str) -> dict | None:
    found = await api.get(f"/v1/chonk/runs/{run_id}", headers=person("priya", roles=("admin",)))
    return await found.json() if found.status == 200 else None


async def stopped(operator, svc, subject: str) -> None:
    """`svc` stopped, until no replica serves `subject` (asked with a body every subject
    refuses, so a replica still draining does nothing with it)."""
    svc.stop()

    async def away() -> bool:
        try:
            await operator.request(subject, b"{}", timeout=1)
        except NoRespondersError:
            return True
        except TimeoutError:  # a replica still draining took it and did not answer: ask again
            return False
        return False

    await eventually(away)


async def answered(operator, org: str, room: str, seq: int) -> tuple:
    """Question `seq` of `room` answered with its first option, as the rooms announce an
    answer: the JetStream context and where the event was stored."""
    answer = MessageStored(
        org=org, room=room, seq=seq + 1, author_kind="human", to=None, answerer=None,
        first_contact=False, answers=seq, choice=Pick(option=0),
    )  # fmt: skip
    js = operator.jetstream()
    return js, await js.publish(ANSWER_STORED.name, codec.encode(answer))


async def said_to(api, headers: dict[str, str]) -> list[dict]:
    """Every message in every room of the bearer's."""
    found = []
    for room in (await (await api.get("/v1/rooms", headers=headers)).json())["rooms"]:
        page = await api.get(f"/v1/rooms/{room['id']}/messages", headers=headers)
        found += (await page.json())["messages"]
    return found


def worker(name: str) -> dict[str, str]:
    """A person of sim-harbortable."""
    return bearer(token(org=HARBOR, user=f"{HARBOR}/{name}"))


def call_out() -> tuple[CallOut, str]:
    """A call-out of its own in sim-harbortable, and the escalation contact's name (no
    other test's), for a test that holds its cover as the Chonk holds one."""
    shift, contact = f"shf_probe_{uuid.uuid4().hex[:8]}", f"esc-{uuid.uuid4().hex[:8]}"
    out = CallOut(
        org=HARBOR, chonk="ops", title="Chief Operating Orca", shift=shift, station="bar",
        end=datetime.now(UTC) + timedelta(hours=5), reporter=f"{HARBOR}/rep-{shift}",
        reporter_name="Lin", absent_name="Ike", escalate_to=f"{HARBOR}/{contact}",
    )  # fmt: skip
    return out, contact


async def offered(operator, *, taken: bool = False, **cover: object) -> tuple:
    """A call-out of its own (`call_out`), its cover held as the Chonk holds one, as `cover`
    says (`taken` by the worker offered), and one worker's offer held under its question:
    the call-out, the offer, and the question's room and seq."""
    out, _ = call_out()
    name = f"w{uuid.uuid4().hex[:8]}"
    offer = Offer(org=HARBOR, shift=out.shift, worker=f"{HARBOR}/{name}", name=name.title())
    room, seq = f"bot-{uuid.uuid4().hex[:16]}", 5
    kv = await operator.jetstream().key_value("chonk-runs")
    if taken:
        cover["taken_by"] = offer.worker
    await kv.create(f"cover.{HARBOR}.{out.shift}", codec.encode(Cover(call_out=out, **cover)))
    await kv.create(f"offered.{room}.{seq}", codec.encode(offer))
    return out, offer, room, seq


def rooms_back(settings_for):
    """The rooms served again, after a test stopped them."""
    sealer = Sealer.from_hex(LINES_KEY)
    return serving(rooms.CONTRACT, settings_for("rooms"), lambda s: serve_rooms(s, sealer))
