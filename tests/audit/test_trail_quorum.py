"""A record whose store timed out, the stream's nodes but its leader away, and that was
stored once they came back: its caller was told 503 and made no change, and the trail then
named that change as made. The audit now follows such a record, found once the org's next
record is stored, with `<action>.abandoned`, as it does one stored past its caller's wait.

Whether the record is stored at all is the cluster's to decide as its nodes come back (a
new leader without it, or the old one with it): about one run in two on this machine. The
old code failed in those; either way the chain must hold no change unmarked."""

import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator

import nats
import pytest
from nats.js import JetStreamContext
from nats.js.errors import ServiceUnavailableError

from libs.audit.reading import records
from libs.audit.trail import AuditUnavailable, Trail
from libs.contracts import SERVICES, audit
from libs.contracts.audit import AuditRecord
from libs.contracts.permissions import OPERATOR, inbox_prefix
from libs.contracts.principal import Principal
from libs.contracts.streams import AUDIT
from libs.runtime.settings import Settings
from libs.stack.processes import stop_all
from libs.stack.servers import start_nodes
from services.audit.main import serve as serve_audit
from tests.personal.conftest import eventually
from tests.support import TEST_SERVICES, frozen, serving

ADA = Principal(org="acme", sub="acme/ada")
ROLES = (OPERATOR, "audit", "echo")
CREATE = "rooms.room.create"
# What a read of the chain meets while the nodes just let go elect their leaders again.
_TRANSIENT = (nats.errors.TimeoutError, ServiceUnavailableError)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list, list[str], dict]]:
    """Three clustered nats-servers of this module's own: their processes, URLs and the
    passwords of the roles it uses."""
    passwords = {role: secrets.token_urlsafe(16) for role in ROLES}
    root = tmp_path_factory.mktemp("quorum")
    procs, urls = start_nodes(root, 3, passwords, (*SERVICES, *TEST_SERVICES))
    try:
        yield procs, urls, passwords
    finally:
        stop_all(procs)


@contextlib.asynccontextmanager
async def _on(url: str, role: str, password: str) -> AsyncIterator[nats.NATS]:
    nc = await nats.connect(url, user=role, password=password, inbox_prefix=inbox_prefix(role))
    try:
        yield nc
    finally:
        await nc.close()


@contextlib.asynccontextmanager
async def _audited(cluster, replica: str) -> AsyncIterator[tuple[Trail, JetStreamContext]]:
    """An audit replica on the first node, replicating its stream on all three, and a
    Trail that asks it; with the operator's JetStream, to read the chain."""
    _, urls, passwords = cluster
    settings = Settings(
        service="audit", nats_url=urls[0], nats_user="audit", nats_password=passwords["audit"],
        metrics_port=0, replica=replica, js_replicas=3,
    )  # fmt: skip
    async with (
        serving(audit.CONTRACT, settings, serve_audit),
        _on(urls[0], "echo", passwords["echo"]) as nc,
        _on(urls[0], OPERATOR, passwords[OPERATOR]) as operator,
    ):
        yield Trail(nc, service="echo", timeout=8.0), operator.jetstream()


@contextlib.asynccontextmanager
async def _followers_stopped(cluster, js: JetStreamContext) -> AsyncIterator[None]:
    """The AUDIT stream's leader alone: its other nodes stopped (SIGSTOP) for the block."""
    procs = cluster[0]
    leader = (await js.stream_info(AUDIT.name)).cluster.leader
    with frozen(*(p.pid for i, p in enumerate(procs) if f"tether-{i}" != leader)):
        yield


async def test_a_record_stored_after_its_store_timed_out_is_marked_abandoned(cluster, org):
    async with _audited(cluster, "q1") as (trail, js):
        await trail.append(org, actor=ADA, action="test.before")
        async with _followers_stopped(cluster, js):
            with pytest.raises(AuditUnavailable):
                async with trail.change(org, actor=ADA, action=CREATE):
                    pytest.fail("a change whose record was not stored was made")

        async def marked() -> list[AuditRecord] | None:
            """The chain once each record its caller was told failed is marked abandoned,
            the org's records going on meanwhile (it is looked for as each is stored)."""
            with contextlib.suppress(AuditUnavailable, *_TRANSIENT):
                await trail.append(org, actor=ADA, action="test.after")
                found = await records(js, org)
                made = [r.n for r in found if r.action == CREATE]
                marks = [r.data["record"] for r in found if r.action == f"{CREATE}.abandoned"]
                return found if made == marks else None
            return None

        found = await eventually(marked, timeout=45)
    assert [r.action for r in found][:1] == ["test.before"]
    assert "test.after" in [r.action for r in found]


async def test_a_failure_record_whose_store_timed_out_is_stored_once_and_never_abandoned(
    cluster, org
):
    """The same for the record that a change failed: asked again until stored (its
    caller, told 503, does), it stands once, and is never marked abandoned, which would
    leave the change it names unmarked."""
    failed = {"record": 1, "error": "RuntimeError"}
    async with _audited(cluster, "q2") as (trail, js):

        async def failure() -> AuditRecord:
            # Unkeyed, as it is not in a Trail: so the stall meets its store, not the
            # claim of its key (on the replicated bucket of kept answers) before it.
            return await trail.append(
                org, actor=ADA, action=f"{CREATE}.failed", data=failed, change_id="cd" * 16,
                failure_of=1,
            )  # fmt: skip

        await trail.append(org, actor=ADA, action=CREATE)
        async with _followers_stopped(cluster, js):
            with pytest.raises(AuditUnavailable):
                await failure()

        async def stored_and_settled() -> list[AuditRecord] | None:
            """The chain once the failure is stored and the org's records went on (a
            record whose store said nothing is looked for as each is stored)."""
            with contextlib.suppress(AuditUnavailable, *_TRANSIENT):
                await failure()
                await trail.append(org, actor=ADA, action="test.after")
                await trail.append(org, actor=ADA, action="test.after")
                return await records(js, org)
            return None

        found = await eventually(stored_and_settled, timeout=45)
    assert [(r.action, r.data) for r in found if r.action.startswith(CREATE)] == [
        (CREATE, {}),
        (f"{CREATE}.failed", failed),
    ]
