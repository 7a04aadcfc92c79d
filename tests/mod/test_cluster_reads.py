"""On three nodes any replica may answer a direct get, and one that has not yet applied an
acknowledged write answers with what was there before (tests/runtime/test_latest.py). A
layer, its versions (each one by its number too) and its drafts are read with every
acknowledged write in them: what a person just wrote is what they read back, what a
draft's end decides on is the layer as it stands, and a 409 names the version there."""

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

from libs.contracts import codec
from libs.contracts.mod import (
    DraftEvent,
    HeldDrafts,
    Installed,
    Manifest,
    drafts_key,
    layer_key,
)
from services.mod.store import InstallRecord, Stored, open_store
from tests.support import asked_again

WRITES = 2000  # a direct get missed 16 to 117 of 3,000 such reads (bench/exact_reads.py)


async def test_a_layer_read_as_soon_as_it_is_written_is_that_write(two_nodes):
    writer, other = two_nodes
    stores = [
        await open_store(nc, draft_ttl=timedelta(hours=1), replicas=3) for nc in (writer, other)
    ]
    key = layer_key("acme", "user", "acme/ada")
    missed, version = [], 0
    for i in range(WRITES):
        version = await asked_again(stores[0].write_layer, key, Stored(), version)
        if i % 5 == 0 and await asked_again(stores[1].version, key, version) is None:
            missed.append(("version", i, version))
        for n, store in enumerate(stores):
            _, read = await asked_again(store.layer, key)
            if read != version:
                missed.append(("layer", i, n, read, version))
        if i % 10 == 0:
            newest = (await asked_again(stores[1].versions, key))[0][0]
            if newest != version:
                missed.append(("versions", i, newest, version))
    assert missed == []


async def test_drafts_read_as_soon_as_they_change_are_that_change(two_nodes):
    writer, other = two_nodes
    store = await open_store(writer, draft_ttl=timedelta(hours=1), replicas=3)
    elsewhere = await open_store(other, draft_ttl=timedelta(hours=1), replicas=3)
    key = drafts_key(layer_key("acme", "user", "acme/bob"), "acme/bob", None)
    missed = []
    for i in range(WRITES):
        change = partial(store.change_drafts, key, _writer_is(f"w{i}"), record=None)
        _, after = await asked_again(change)
        if await asked_again(elsewhere.drafts, key) != after:
            missed.append(i)
    assert missed == []


async def test_installs_read_as_soon_as_they_change_are_that_change(two_nodes):
    writer, other = two_nodes
    store = await open_store(writer, draft_ttl=timedelta(hours=1), replicas=3)
    elsewhere = await open_store(other, draft_ttl=timedelta(hours=1), replicas=3)
    prefix = layer_key("acme", "org", "acme/ada")
    key = f"{prefix}.acme.tool"
    missed = []

    async def install(record: InstallRecord) -> None:
        """As the service installs: at the layer's newest revision, read through the leader
        (the uninstall just made elsewhere included)."""
        _, at = await store.installed_at(prefix)
        await store.install(key, record, prefix=prefix, at=at)

    for i in range(WRITES):
        record = _installed_at(datetime(2026, 12, 3, tzinfo=UTC) + timedelta(seconds=i))
        await asked_again(install, record)
        found = [value for _, value in await asked_again(elsewhere.installed, prefix)]
        if found != [codec.encode(record)]:
            missed.append(("installed", i))
        if i % 10 == 0:
            uninstall = partial(elsewhere.uninstall, key, record=_unrecorded)
            if not await asked_again(uninstall):
                missed.append(("uninstall", i))
            if await asked_again(store.installed, prefix) != []:
                missed.append(("uninstalled", i))
    assert missed == []


def _unrecorded(*_: object) -> contextlib.nullcontext[None]:
    return contextlib.nullcontext()


def _installed_at(when: datetime) -> InstallRecord:
    manifest = Manifest(id="tool", publisher="acme", title="Tool", version="1.0.0")
    installed = Installed(
        mod="acme/tool",
        title="Tool",
        layer="org",
        digest="sha256:" + "0" * 64,
        permissions=(),
        installed_by="acme/ada",
        installed_at=when,
    )
    return InstallRecord(manifest=manifest, installed=installed)


def _writer_is(writer: str) -> Callable[[HeldDrafts], HeldDrafts]:
    """A change to the drafts that differs at each step: the last event's writer."""
    event = DraftEvent(id="md-0000000000000001", state="open", writer=writer)
    return lambda _: HeldDrafts(last=event)
