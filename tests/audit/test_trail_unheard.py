"""A change's record stored, and its answer lost on the way back (the caller's NATS node
stalled, or its link): the caller was told nothing, made no change, and answered 503; the
trail named the change as made. Looked for after a load on the cluster shape with two of
its three nodes stopped now and then left one act more recorded as allowed than charged
(once, in counts that could not say which act). The caller now asks again, `abandoned`,
and the record is followed by `<action>.abandoned`.

The lost answer is made here by a TCP proxy between the caller and its server (`Link`),
which keeps what the server sends back while it is told to."""

from collections.abc import AsyncIterator

import pytest

from libs.audit.reading import records
from libs.audit.trail import AuditUnavailable, Trail
from libs.contracts.base import key_token
from libs.contracts.principal import Principal
from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime.kv import current
from tests.personal.conftest import eventually
from tests.support import Link, across_a_link

ADA = Principal(org="acme", sub="acme/ada")
CREATE = "rooms.room.create"


@pytest.fixture
async def unheard_trail(stack, audit_service) -> AsyncIterator[tuple[Trail, Link]]:
    """A Trail whose connection crosses a Link; its wait short, to keep the test short."""
    async with across_a_link(stack.nats_url, "echo", stack.passwords["echo"]) as (nc, link):
        trail = Trail(nc, service="echo", timeout=1.5)
        try:
            yield trail, link
        finally:
            link.hear()
            await trail.settle()


async def test_a_record_whose_answer_never_came_is_marked_abandoned(unheard_trail, operator, org):
    trail, link = unheard_trail
    await trail.append(org, actor=ADA, action="test.before")
    link.deafen()
    try:
        with pytest.raises(AuditUnavailable):
            async with trail.change(org, actor=ADA, action=CREATE, target="r1"):
                pytest.fail("a change whose record was not answered was made")
    finally:
        link.hear()

    async def marked() -> list | None:
        found = await records(operator.jetstream(), org)
        return found if any(r.action == f"{CREATE}.abandoned" for r in found) else None

    found = await eventually(marked, timeout=15)
    [made] = [r for r in found if r.action == CREATE]
    assert [(r.action, r.data) for r in found] == [
        ("test.before", {}),
        (CREATE, {}),
        (f"{CREATE}.abandoned", {"record": made.n}),
    ]


async def test_a_failed_record_asked_again_once_its_kept_answer_is_gone_is_stored_once(
    unheard_trail, operator, org
):
    """The record that a change failed is keyed, and the audit keeps its answer; but a
    replica cut off from the bucket as it kept it (its node killed) runs the record again
    when it is asked again. Seen once in a load on the cluster shape with the leading node
    killed: one change followed by two `.failed`. It is stored under an id of its own."""
    trail, link = unheard_trail
    with pytest.raises(RuntimeError):
        async with trail.change(org, actor=ADA, action=CREATE, target="r1"):
            link.deafen()  # the failed record's answer comes after its caller gave up
            raise RuntimeError("the store said no")
    kept = await operator.jetstream().key_value(REPLIES_BUCKET)
    for entry in await current(kept, f"audit.echo.failed.{key_token(org)}.*"):
        await kept.delete(entry.key)  # as a replica cut off as it kept it leaves it
    link.hear()
    await trail.settle()  # asks the failed record once more, now

    found = await records(operator.jetstream(), org)
    assert [(r.action, r.data) for r in found] == [
        (CREATE, {}),
        (f"{CREATE}.failed", {"record": 1, "error": "RuntimeError"}),
    ]
