"""The audit trail on a real AUDIT stream: concurrent writers, failures, the verify command."""

import asyncio
import subprocess
import sys

import msgspec
import pytest

from libs.audit.chain import first_break, seal
from libs.audit.trail import AuditUnavailable, Trail
from libs.contracts.audit import AuditRecord
from libs.contracts.principal import Principal
from libs.contracts.streams import audit_subject
from libs.runtime.service import ensure_shared_streams

ADA = Principal(org="acme", sub="acme/ada")


@pytest.fixture
async def trail(connect):
    async with connect("echo") as nc:
        js = nc.jetstream()
        await ensure_shared_streams(js, ("AUDIT",))
        yield Trail(js, service="echo")


async def test_concurrent_writers_never_fork_an_orgs_chain(trail, org):
    async def writer(w: int) -> None:
        for i in range(20):
            await trail.append(org, actor=ADA, action="test.write", data={"w": w, "i": i})

    await asyncio.gather(*(writer(w) for w in range(8)))
    records = [r async for r in trail.records(org)]
    assert [r.n for r in records] == list(range(1, 161))
    assert first_break(records) is None


async def test_each_org_has_its_own_chain(trail, org):
    other = f"{org}-b"
    await trail.append(org, actor=ADA, action="a")
    await trail.append(other, actor=ADA, action="b")
    mine = [r async for r in trail.records(org)]
    theirs = [r async for r in trail.records(other)]
    assert ([r.n for r in mine], [r.n for r in theirs]) == ([1], [1])


async def test_a_change_is_recorded_before_it_happens(trail, org):
    async with trail.change(org, actor=ADA, action="grant.issue", target="g1") as record:
        seen = [r async for r in trail.records(org)]
    assert seen == [record]
    assert (record.action, record.target, record.actor) == ("grant.issue", "g1", ADA)


async def test_a_failed_change_is_followed_by_a_failed_record(trail, org):
    with pytest.raises(RuntimeError):
        async with trail.change(org, actor=ADA, action="grant.issue", target="g1"):
            raise RuntimeError("the store said no")
    records = [r async for r in trail.records(org)]
    assert [(r.action, r.data) for r in records] == [
        ("grant.issue", {}),
        ("grant.issue.failed", {"record": 1, "error": "RuntimeError"}),
    ]


async def test_a_change_whose_record_cannot_be_written_does_not_happen(connect, org):
    async with connect("echo") as nc:
        trail = Trail(nc.jetstream(timeout=0.5), service="echo")
    happened = []
    with pytest.raises(AuditUnavailable):
        async with trail.change(org, actor=ADA, action="grant.issue"):
            happened.append(True)
    assert happened == []


def _verify(stack, org: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "libs.cli.main", "audit", "verify", "--org", org],
        env=stack.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_the_verify_command_names_the_first_broken_record(trail, stack, operator, org):
    for i in range(3):
        await trail.append(org, actor=ADA, action="step", data={"i": i})
    intact = await asyncio.to_thread(_verify, stack, org)
    last = [r async for r in trail.records(org)][-1]
    forged = seal(
        AuditRecord(org=org, n=0, at=last.at, service="eve", actor=None, action="forged"),
        after=msgspec.structs.replace(last, hash="f" * 64),
    )
    await operator.jetstream().publish(audit_subject(org), msgspec.json.encode(forged))
    broken = await asyncio.to_thread(_verify, stack, org)
    assert (intact.returncode, intact.stdout) == (0, f"{org}: 3 records, chain intact\n")
    assert broken.returncode == 1
    assert broken.stdout == (
        f"{org}: chain broken at record 4: prev does not name the previous record's hash\n"
    )
