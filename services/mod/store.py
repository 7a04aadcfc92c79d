"""The mod service's buckets (hip-0528 §9.3, §9.7):

    mod-layers    <org>.org, <org>.user.<person>   a layer; 64 revisions, no expiry
    mod-drafts    <layer>.<writer>.<act>           one writer's drafts over a layer; a TTL
                                                   past their expiry
    mod-installs  <org>.org.<publisher>.<id>, <org>.user.<person>.<publisher>.<id>

Every key names the org, and a person's the person; a draft's names the person and the
agent that wrote it: a lookup that omits them cannot be written. A layer's version is its
revision.

A layer, its drafts and the installs are read with every acknowledged write in them
(through the stream's leader on a replicated bucket, `libs.runtime.leader`): a person
reads back what they just wrote, a draft's end sees the layer as it stands, a 409 names the
version that is there, and a mod just installed is on the surface read next.
"""

from collections.abc import Callable
from datetime import timedelta

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from libs.contracts import codec, pending
from libs.contracts.mod import (
    DRAFTS_BUCKET,
    INSTALLS_BUCKET,
    LAYERS_BUCKET,
    Change,
    HeldDrafts,
    Installed,
    Manifest,
    Op,
)
from libs.runtime.direct import batch_get
from libs.runtime.kv import (
    GONE,
    Read,
    Record,
    caught_up,
    current,
    open_bucket,
    remove,
    retried,
    swap,
    write_at,
    write_under,
)
from libs.runtime.leader import exact_reads, newest_seq
from libs.runtime.locks import KeyedLocks

__all__ = ["InstallRecord", "ModStore", "Stored", "install_of", "open_store"]


class Stored(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A layer's value: its ops and the change that produced it."""

    ops: list[Op] = []
    change: Change | None = None


class InstallRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    manifest: Manifest
    installed: Installed


_stored = codec.decoder(Stored)
_drafts = codec.decoder(HeldDrafts)
_install = codec.decoder(InstallRecord)


def install_of(value: bytes) -> InstallRecord:
    return _install.decode(value)


class ModStore:
    def __init__(
        self, nc: Client, layers: KeyValue, drafts: KeyValue, installs: KeyValue, exact: Read
    ) -> None:
        self._nc, self._exact = nc, exact
        self._layers, self._drafts, self._installs = layers, drafts, installs
        self._opening = KeyedLocks()

    async def layers(self, *keys: str) -> list[tuple[Stored, int]]:
        """Several layers in one read, each as `layer` answers it."""
        found = {entry.key: entry for entry in await self._exact(self._layers, *keys)}
        return [
            (_stored.decode(e.value or b"{}"), e.revision)
            if (e := found.get(k)) is not None
            else (Stored(), 0)
            for k in keys
        ]

    async def layer(self, key: str) -> tuple[Stored, int]:
        """The layer and its version (0 and no ops if it was never written)."""
        ((stored, version),) = await self.layers(key)
        return stored, version

    async def write_layer(self, key: str, layer: Stored, base: int) -> int:
        """Compare-and-set on `base`; the new version, or Conflict if the layer moved."""
        return await write_at(self._layers, key, codec.encode(layer), base)

    async def version(self, key: str, version: int) -> Stored | None:
        """The layer as it was at `version`, if that version is still retained. The replica
        that answers may not hold a version just written, so one it does not hold is
        looked for among the versions, which hold the newest."""
        if version == 0:
            return Stored()
        try:
            entry = await self._layers.get(key, revision=version)
        except KeyNotFoundError:
            return dict(await self.versions(key)).get(version)
        return None if entry.value is None else _stored.decode(entry.value)

    async def versions(self, key: str) -> list[tuple[int, Stored]]:
        """Every retained version, newest first: one batched direct get of the key's
        messages (nats-py's `history` watches, and a watch begun as a write lands can end
        before it sees anything). Any replica may answer it, so on a replicated bucket it is
        asked again until it holds the newest version, read as `layer` reads it; one node's
        answer is already whole."""
        kv = self._layers
        newest = 0 if self._exact is current else (await self.layer(key))[1]

        async def read() -> tuple[list[Msg], bool]:
            found, _ = await batch_get(
                kv._js._nc, kv._stream, {"seq": 1, "next_by_subj": f"{kv._pre}{key}", "batch": 64}
            )
            return found, (int(found[-1].headers["Nats-Sequence"]) if found else 0) >= newest

        found = await caught_up(read, f"the versions of {key}")
        return [
            (int(m.headers["Nats-Sequence"]), _stored.decode(m.data))
            for m in reversed(found)
            if m.data and m.headers.get("KV-Operation") not in GONE
        ]

    async def drafts(self, key: str) -> HeldDrafts:
        """One writer's drafts over a layer (`drafts_key`)."""
        found = await self._exact(self._drafts, key)
        return _drafts.decode(found[0].value or b"{}") if found else HeldDrafts()

    async def layer_drafts(self, layer: str) -> list[HeldDrafts]:
        """Every writer's drafts over the layer keyed `layer`: whoever keeps them reads
        them all."""
        found = await self._exact(self._drafts, f"{layer}.*.*")
        return [_drafts.decode(e.value or b"{}") for e in found]

    async def open_draft(
        self,
        layer: str,
        key: str,
        change: Callable[[HeldDrafts, int], HeldDrafts],
        *,
        record: Record,
    ) -> HeldDrafts:
        """The writer's drafts at `key` after `change`, which is given them and how many
        are open over the layer under its other writers. Written only if no draft over the
        layer moved since they were counted, so the layer's bound holds across writers."""
        kv, under = self._drafts, f"{layer}.*.*"

        async def attempt() -> HeldDrafts:
            # The revision first, so any write after it is in what is counted.
            newest = await newest_seq(kv._js, kv._stream, f"{kv._pre}{under}")
            every = {e.key: _drafts.decode(e.value or b"{}") for e in await self._exact(kv, under)}
            before = every.pop(key, HeldDrafts())
            after = change(before, sum(len(held.open) for held in every.values()))
            if after != before:
                async with record(before, after):
                    await write_under(kv, key, codec.encode(after), under, newest)
                await self._nudge(key)
            return after

        async with self._opening.hold(layer):
            return await retried(attempt, key)

    async def change_drafts(
        self, key: str, change: Callable[[HeldDrafts], HeldDrafts], *, record: Record | None
    ) -> tuple[HeldDrafts, HeldDrafts]:
        """The writer's drafts at `key` before and after `change`."""
        before, after = await swap(
            self._drafts,
            key,
            change,
            decode=lambda raw: _drafts.decode(raw or b"{}"),
            default=HeldDrafts(),
            record=record,
            read=self._exact,
        )
        if before != after:
            await self._nudge(key)
        return before, after

    async def _nudge(self, key: str) -> None:
        """Whoever the drafts at `key` wait on is told they changed: the person for their
        own layer, every admin for the org's."""
        org, layer, person, _ = key.split(".", 3)
        token = pending.ADMINS if layer == "org" else person
        await self._nc.publish(pending.changed("mod", org, token), b"")

    async def installed_at(self, prefix: str) -> tuple[list[tuple[int, bytes]], int]:
        """`installed`, and a revision no newer than what it read: the one an install into
        the layer is written at (`install`), so what it was decided on still holds when it
        lands. The revision is read first, so any write after it is in what is read."""
        kv = self._installs
        newest = await newest_seq(kv._js, kv._stream, f"{kv._pre}{prefix}.*.*")
        return await self.installed(prefix), newest

    async def install(self, key: str, record: InstallRecord, *, prefix: str, at: int) -> None:
        """Written only if no install or uninstall in the layer `prefix` landed since `at`;
        Conflict if one did."""
        await write_under(self._installs, key, codec.encode(record), f"{prefix}.*.*", at)

    async def installed(self, prefix: str) -> list[tuple[int, bytes]]:
        """The installs under `prefix` (`<org>.org` or `<org>.user.<person>`), as stored:
        (revision, value), so a reader can tell a set it has seen from one it has not
        without decoding it (`install_of` decodes one)."""
        entries = await self._exact(self._installs, f"{prefix}.*.*")
        return sorted((e.revision, e.value) for e in entries)

    async def uninstall(self, key: str, *, record: Record) -> bool:
        """Purged, recorded before, if installed; if not, False and nothing recorded."""
        if not await self._exact(self._installs, key):
            return False
        async with record(None, None):
            await remove(self._installs, key, keep=None)
        return True


async def open_store(nc: Client, *, draft_ttl: timedelta, replicas: int = 1) -> ModStore:
    js = nc.jetstream()
    layers = await open_bucket(
        js, KeyValueConfig(bucket=LAYERS_BUCKET, history=64, replicas=replicas)
    )
    # A draft expires by its own timer (recorded); the bucket's TTL only sweeps up after.
    keep = draft_ttl + timedelta(hours=1)
    drafts = await open_bucket(
        js,
        KeyValueConfig(
            bucket=DRAFTS_BUCKET, history=1, ttl=keep.total_seconds(), replicas=replicas
        ),
    )
    installs = await open_bucket(
        js, KeyValueConfig(bucket=INSTALLS_BUCKET, history=1, replicas=replicas)
    )
    # The three buckets are made alike, so their replicas call for one way of reading them
    # exactly.
    return ModStore(nc, layers, drafts, installs, await exact_reads(layers))
