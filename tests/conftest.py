"""The test session's own nats-server (with tether's users and permissions) and Redis."""

import contextlib
import os
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta

import msgspec
import nats
import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from libs.contracts import SERVICES, agents, audit, chonk, ladder, mod, poa, rooms, scheduler
from libs.contracts.permissions import GATEWAY, OPERATOR, inbox_prefix
from libs.model import Scripted
from libs.runtime.service import Service
from libs.runtime.settings import Settings
from libs.stack.home import Home
from libs.stack.local import start_local
from libs.stack.processes import stop_all
from libs.stack.servers import start_nodes
from services.agents.domain.prompt import acknowledged
from services.agents.main import serve as serve_agents
from services.audit.main import serve as serve_audit
from services.chonk.main import serve as serve_chonk
from services.gateway.app import init_app
from services.gateway.routes import ROUTES
from services.gateway.settings import GatewaySettings
from services.ladder.main import serve as serve_ladder
from services.mod.main import serve as serve_mod
from services.poa.main import serve as serve_poa
from services.rooms.main import serve as serve_rooms
from services.rooms.sealing import Sealer
from services.scheduler.main import serve as serve_scheduler
from tests.acks import Acks
from tests.support import KEY, LINES_KEY, TEST_SERVICES, operator_on, serving


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Every replica the test's fixtures serve is told to stop before the first of them is
    torn down, so their drains (each waits out its readers' last pull) overlap instead of
    adding up, one fixture after another."""
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Service):
            value.stop()


class Stack(msgspec.Struct):
    home: Home
    nats_url: str
    redis_url: str
    passwords: dict[str, str]
    nats_config: dict[str, object]

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a subprocess of this stack runs with."""
        return (
            os.environ
            | {
                "NATS_URL": self.nats_url,
                "REDIS_URL": self.redis_url,
                "TETHER_HOME": str(self.home.root),
            }
            | extra
        )


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[str], str]]:
    """Three clustered nats-servers of their own, for a module's tests of replicated
    buckets: their URLs, and the operator's password (its only user)."""
    password = secrets.token_urlsafe(16)
    root = tmp_path_factory.mktemp("three-nodes")
    procs, urls = start_nodes(root, 3, {OPERATOR: password}, SERVICES)
    try:
        yield urls, password
    finally:
        stop_all(procs)


@pytest.fixture
async def two_nodes(three_nodes) -> AsyncIterator[tuple[nats.NATS, nats.NATS]]:
    """The operator connected to two nodes of `three_nodes`: one that writes, and another,
    whose direct gets a replica behind the leader may answer."""
    (first, _, third), password = three_nodes
    writer, other = await operator_on(first, password), await operator_on(third, password)
    yield writer, other
    await writer.close()
    await other.close()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = Home(tmp_path_factory.mktemp("tether-home"))
    servers = start_local(home, (*SERVICES, *TEST_SERVICES))
    try:
        yield Stack(
            home=home,
            nats_url=servers.nats_url,
            redis_url=servers.redis_url,
            passwords=servers.passwords,
            nats_config=servers.nats_config,
        )
    finally:
        stop_all(servers.procs)


@pytest.fixture(scope="session")
def connect(stack: Stack):
    """connect(role): a NATS connection with that role's credential, closed after the test."""

    @contextlib.asynccontextmanager
    async def connect(role: str, **options: object) -> AsyncIterator[nats.NATS]:
        nc = await nats.connect(
            stack.nats_url,
            user=role,
            password=stack.passwords[role],
            inbox_prefix=inbox_prefix(role),
            **options,
        )
        try:
            yield nc
        finally:
            await nc.close()

    return connect


@pytest_asyncio.fixture(loop_scope="session")
async def operator(connect) -> AsyncIterator[nats.NATS]:
    async with connect(OPERATOR) as nc:
        yield nc


@pytest_asyncio.fixture(loop_scope="session")
async def acks(operator) -> Acks:
    """What each reader is done with from here on: a negative waits for it."""
    return await Acks.heard_from_now(operator)


@pytest.fixture
async def audit_service(settings_for) -> AsyncIterator[object]:
    """The one writer of audit chains, which every service's Trail asks. A fixture of each
    test that needs it, never of the session: a replica in the session's loop would not
    answer while a synchronous test blocks that loop."""
    async with serving(audit.CONTRACT, settings_for("audit"), serve_audit) as svc:
        yield svc


@pytest.fixture
def org() -> str:
    """A fresh org per test, so tests never share state."""
    return f"org-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def settings_for(stack: Stack):
    """settings_for(service, replica): a replica's settings on this stack."""

    def settings_for(service: str, replica: str = "r1") -> Settings:
        return Settings(
            service=service,
            nats_url=stack.nats_url,
            nats_user=service,
            nats_password=stack.passwords[service],
            metrics_port=0,
            replica=replica,
            pull_wait=0.1,  # each test's teardown waits out its readers' last pull
        )

    return settings_for


@pytest.fixture
def gateway_settings(stack: Stack) -> GatewaySettings:
    return GatewaySettings(
        jwt_key=KEY,
        redis_url=stack.redis_url,
        nats_url=stack.nats_url,
        nats_password=stack.passwords[GATEWAY],
        rate_limit=0,
        metrics_port=0,
    )


@pytest.fixture
async def client_for():
    """client_for(settings, services, routes): an HTTP client of a gateway from init_app."""
    clients: list[TestClient] = []

    async def client_for(settings: GatewaySettings, services=SERVICES, routes=ROUTES) -> TestClient:
        client = TestClient(TestServer(init_app(settings, routes=routes, services=services)))
        await client.start_server()
        clients.append(client)
        return client

    yield client_for
    for client in clients:
        await client.close()


@pytest.fixture
def ladder_clock() -> Callable[[], datetime]:
    """The ladder's clock. A module that watches windows end overrides it with one running
    behind, so a one-minute window ends a few real seconds after it opens."""
    return lambda: datetime.now(UTC)


@pytest.fixture
def settled_kept() -> int | None:
    """Seconds the ladder, PoA, the rooms and the Chonks keep what is settled (None: their
    settings' default); a module may keep it shorter."""
    return None


def _keeping(settings: Settings, seconds: int | None) -> Settings:
    return settings if seconds is None else msgspec.structs.replace(settings, settled_kept=seconds)


@pytest.fixture
async def ladder_service(settings_for, ladder_clock, settled_kept, audit_service):
    async with serving(
        ladder.CONTRACT,
        _keeping(settings_for("ladder"), settled_kept),
        lambda svc: serve_ladder(svc, ladder_clock),
    ) as svc:
        yield svc


@pytest.fixture
async def rooms_service(settings_for, settled_kept, audit_service):
    sealer = Sealer.from_hex(LINES_KEY)
    async with serving(
        rooms.CONTRACT,
        _keeping(settings_for("rooms"), settled_kept),
        lambda svc: serve_rooms(svc, sealer),
    ) as svc:
        yield svc


@pytest.fixture
def poa_clock() -> Callable[[], datetime]:
    return lambda: datetime.now(UTC)


@pytest.fixture
async def poa_service(
    settings_for, poa_clock, settled_kept, audit_service, rooms_service, scheduler_service
):
    """PoA with what its asks need: the rooms to ask in and the scheduler to time them."""
    async with serving(
        poa.CONTRACT,
        _keeping(settings_for("poa"), settled_kept),
        lambda svc: serve_poa(svc, poa_clock),
    ) as svc:
        yield svc


@pytest.fixture
def scheduler_up(settings_for):
    """The scheduler, served for as long as its context lasts: for a test whose
    `scheduler_service` is away, bringing it up and down."""
    targets = {s.name: s.timer_targets for s in (*SERVICES, *TEST_SERVICES) if s.timer_targets}
    return lambda: serving(
        scheduler.CONTRACT, settings_for("scheduler"), lambda svc: serve_scheduler(svc, targets)
    )


@pytest.fixture
async def scheduler_service(scheduler_up):
    async with scheduler_up() as svc:
        yield svc


@pytest.fixture
def mod_clock() -> Callable[[], datetime]:
    """The mod service's clock. A module that watches a draft's window end overrides it
    with one running behind, so a one-minute window ends a few real seconds after."""
    return lambda: datetime.now(UTC)


@pytest.fixture
def draft_ttl() -> timedelta:
    """How long a draft lives; a module that watches one expire makes it seconds."""
    return timedelta(days=1)


@pytest.fixture
def reviewer() -> str:
    return "manifest"


@pytest.fixture
def model() -> Scripted:
    """The model the agents service drafts with: the built-in one, unless a module gives
    its own."""
    return Scripted(acknowledged)


@pytest.fixture
async def agents_service(settings_for, model, audit_service):
    async with serving(
        agents.CONTRACT, settings_for("agents"), lambda svc: serve_agents(svc, model)
    ) as svc:
        yield svc


@pytest.fixture
async def mod_service(settings_for, audit_service, mod_clock, draft_ttl, reviewer):
    async with serving(
        mod.CONTRACT,
        settings_for("mod"),
        lambda svc: serve_mod(svc, mod_clock, draft_ttl=draft_ttl, review=reviewer),
    ) as svc:
        yield svc


@pytest.fixture
async def chonk_service(
    settings_for, settled_kept, audit_service, rooms_service, scheduler_service
):
    """The manager agents, with the rooms their messages are carried into and the
    scheduler their follow-ups wait on."""
    chonk_settings = _keeping(settings_for("chonk"), settled_kept)
    async with serving(chonk.CONTRACT, chonk_settings, serve_chonk) as svc:
        yield svc
