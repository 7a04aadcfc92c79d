"""A request its caller stopped waiting for is not carried out. Every call says when its
caller stops waiting (`Tether-Before`), and a replica that comes to a request past it (it
was stalled, or so busy the request queued) answers 503 `request-late` and does nothing:
done then, it was a change no one was told of. A window whose every try to send timed out
was `failed`, "nothing was sent", and the rooms then sent it when they went on."""

import re
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from aiohttp import ClientSession

from libs.contracts import rooms
from libs.contracts.permissions import GATEWAY
from libs.contracts.principal import BEFORE_HEADER, PRINCIPAL_HEADER, Principal
from libs.contracts.problem import PROBLEM_HEADER, Problem, Unavailable
from libs.runtime.calls import call
from libs.stack.servers import free_port
from tests.personal.conftest import eventually
from tests.support import (
    ECHO,
    LINES_KEY,
    SAY,
    Echo,
    Say,
    answers,
    encode,
    frozen,
    module_process,
    running,
)


async def test_a_request_past_its_callers_wait_is_refused_and_not_handled(settings_for, connect):
    echo = Echo("one")
    ada = Principal(org="acme", sub="acme/ada")
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    async with (
        running(ECHO, settings_for("echo"), lambda _: {SAY: echo.say}),
        connect(GATEWAY) as nc,
    ):
        headers = {PRINCIPAL_HEADER: encode(ada).decode(), BEFORE_HEADER: past}
        late = await nc.request(SAY.name, encode(Say(text="late")), 5, headers=headers)
        on_time = await call(nc, SAY, Say(text="on time"), caller=GATEWAY, principal=ada)
    problem = msgspec.json.decode(late.data, type=Problem)
    assert (late.headers[PROBLEM_HEADER], problem.type) == (
        "503",
        "urn:tether:problem:request-late",
    )
    assert past in problem.detail
    assert on_time.text == "on time"
    assert [s.text for s in echo.handled] == ["on time"]


async def test_a_send_the_rooms_come_to_after_its_caller_gave_up_is_not_sent(
    stack, connect, org, audit_service, agents_service
):
    """The rooms stalled (stopped here) while the ladder asked them to send a window's
    message: the call timed out, and the message was stored when they went on."""
    metrics_port = free_port()
    env = stack.env(
        NATS_USER="rooms",
        NATS_PASSWORD=stack.passwords["rooms"],
        TETHER_METRICS_PORT=str(metrics_port),
        TETHER_LINES_KEY=LINES_KEY,
    )
    ada = Principal(org=org, sub=f"{org}/ada")
    async with (
        module_process("services.rooms.main", env) as process,
        ClientSession(f"http://127.0.0.1:{metrics_port}") as http,
        connect(GATEWAY) as gateway,
        connect("ladder") as ladder,
    ):
        await eventually(answers(http, "/readyz", 200), timeout=30)
        room: rooms.Room = await call(
            gateway, rooms.CREATE, rooms.CreateRoom(title="team"), caller=GATEWAY, principal=ada
        )
        send = rooms.Deliver(
            org=org, room=room.id, person=ada.sub, kind="message", text="on my way",
            key="send-late", unattended=True,
        )  # fmt: skip
        with frozen(process.pid), pytest.raises(Unavailable):
            await call(ladder, rooms.DELIVER, send, caller="ladder", timeout=1.0)

        async def answered() -> bool:  # the stalled request handled, one way or the other
            return await _handled(http, rooms.DELIVER.name) == 1

        await eventually(answered, timeout=20)
        page: rooms.MessagePage = await call(
            gateway, rooms.MESSAGES, rooms.ListMessages(id=room.id), caller=GATEWAY, principal=ada
        )
    assert [m.text for m in page.messages] == []


async def _handled(http: ClientSession, subject: str) -> int:
    async with http.get("/metrics") as response:
        text = await response.text()
    found = re.findall(
        rf'tether_requests_total\{{[^}}]*subject="{re.escape(subject)}"[^}}]*\}} (\S+)', text
    )
    return sum(int(float(n)) for n in found)
