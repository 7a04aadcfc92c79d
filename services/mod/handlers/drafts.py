"""Drafts (§9.4 rules 2, 7, 8): held, kept at their base, discarded, committed at the end of
the person's window when their level still lets their agent act unasked, and expired; each
recorded before it happens."""

import uuid
from datetime import timedelta

import msgspec

from libs.contracts import mod, scheduler
from libs.contracts.ladder import WINDOW_SECONDS, Window
from libs.contracts.principal import Principal
from libs.contracts.problem import KeyReused, Refused, Unavailable
from libs.runtime.kv import Record
from libs.runtime.service import request_key
from services.mod.domain import drafts, patches
from services.mod.handlers.common import DraftTimer, Mod, may_keep, ops_data
from services.mod.store import Stored

__all__ = ["Drafts"]

_END, _EXPIRY = "draft_end", "draft_expiry"


class Drafts(Mod):
    async def _hold(
        self, req: mod.WriteLayer, p: Principal, why: str, *, window: Window | None
    ) -> mod.Written:
        """The write as a draft over its layer: it writes no version (§9.4 rule 7). Keyed, it
        is made under its key: a replica that died before it kept its answer, asked again,
        answers the draft it made."""
        now, key = self._clock(), request_key()
        draft = mod.LayerDraft(
            id=f"md-{key[:16]}" if key else f"md-{uuid.uuid4().hex[:16]}",
            layer=req.layer,
            base=req.base,
            ops=req.ops,
            note=req.note,
            writer=p.sub,
            act=p.act,
            state="open",
            created_at=now,
            expires_at=now + self._draft_ttl,
            commits_at=None if window is None else now + timedelta(seconds=WINDOW_SECONDS[window]),
            waits="" if window is not None else why,
        )
        layer = self._key(p, req.layer)
        mine = mod.drafts_key(layer, p.sub, p.act)
        if key and (made := drafts.find(await self._store.drafts(mine), draft.id)) is not None:
            return mod.Written(draft=_made_by(made, draft))
        # Timed before it is held, so a draft held always expires (and its window ends): a
        # timer whose draft never was finds none and does nothing.
        timer = DraftTimer(org=p.org, person=p.sub, layer=req.layer, id=draft.id)
        await self._timer(f"mod.{draft.id}.expiry", draft.expires_at, _EXPIRY, timer)
        if draft.commits_at is not None:
            await self._timer(f"mod.{draft.id}.end", draft.commits_at, _END, timer)
        try:
            held = await self._opened(p, layer, mine, draft)
        except Refused:
            await self._cancel_timers(draft.id)
            raise
        made = drafts.find(held, draft.id)
        assert made is not None
        return mod.Written(draft=_made_by(made, draft))

    async def _opened(
        self, p: Principal, layer: str, mine: str, draft: mod.LayerDraft
    ) -> mod.HeldDrafts:
        """Held among its writer's open drafts at `mine`, counted with every other writer's
        over the layer. When they are full, any past its expiry (its timer late or lost) is
        expired first: otherwise it would hold its place for good."""

        async def held() -> mod.HeldDrafts:
            return await self._store.open_draft(
                layer,
                mine,
                lambda held, elsewhere: drafts.opened(held, draft, elsewhere=elsewhere),
                record=self._recorded(p.org, p, "mod.draft.create", draft, ops=ops_data(draft.ops)),
            )

        try:
            return await held()
        except Refused as exc:
            if exc.problem.rule != "drafts-full":
                raise
        now = self._clock()
        for writer in await self._store.layer_drafts(layer):
            for found in writer.open:
                if drafts.lapsed(found, now):
                    await self._expire(p, found)
        return await held()

    async def drafts(self, _: mod.ListLayerDrafts, p: Principal) -> mod.LayerDraftList:
        found = [d for layer in ("org", "user") for d in await self._visible(p, layer)]
        # One past its expiry, its timer late or lost, cannot be kept: none to list.
        now = self._clock()
        open_ = [d for d in found if d.state == "open" and not drafts.lapsed(d, now)]
        return mod.LayerDraftList(drafts=sorted(open_, key=lambda d: (d.created_at, d.id)))

    async def draft(self, req: mod.LayerDraftRef, p: Principal) -> mod.LayerDraft:
        return await self._find(p, req.id)

    async def draft_composed(self, req: mod.LayerDraftRef, p: Principal) -> mod.Composed:
        """What the caller is drawn with the draft over the layer it would change: what a
        host shows, to whoever may keep it and to the agent that wrote it (§9.4 rule 7)."""
        return await self._composed(p, mine=True, draft=self._find(p, req.id))

    async def keep(self, req: mod.LayerDraftRef, p: Principal) -> mod.Written:
        """Keep: the draft's ops applied at its base, under the same compare-and-set."""
        draft = await self._find(p, req.id)
        if not may_keep(p, draft.layer):
            raise Refused(
                "may-not-keep",
                403,
                "an agent never keeps a draft"
                if p.is_agent
                else f"only an admin of {p.org} keeps a draft of its layer",
            )
        if draft.state == "kept" and draft.version is not None and request_key():
            return mod.Written(version=draft.version)  # its answer lost in a failover
        if draft.state != "open":
            raise Refused("draft-closed", 409, f"draft {draft.id} was {draft.state}")
        if drafts.lapsed(draft, self._clock()):
            closed = await self._expire(p, draft)
            if closed is not None:
                raise Refused("draft-closed", 409, f"draft {draft.id} was {closed.state}")
        return mod.Written(version=await self._commit(p, draft, "mod.draft.keep"))

    async def discard(self, req: mod.LayerDraftRef, p: Principal) -> mod.LayerDraft:
        """By whoever may keep it, or by the agent that wrote it."""
        draft = await self._find(p, req.id)
        if not (may_keep(p, draft.layer) or _wrote(p, draft)):
            raise Refused("may-not-discard", 403, f"you may not discard {draft.id}")
        if draft.state == "discarded" and request_key():
            return draft  # its answer lost in a failover
        if draft.state != "open":
            raise Refused("draft-closed", 409, f"draft {draft.id} was {draft.state}")
        return await self._settle(p, draft, "discarded")

    async def draft_end(self, fired: scheduler.Fired) -> None:
        """The person's window ended: the draft commits itself if their level is still send
        and the layer has not moved; otherwise it waits for Keep (§9.4 rule 2)."""
        t = msgspec.convert(fired.payload, DraftTimer)
        p = Principal(org=t.org, sub=t.person)
        key = mod.layer_key(t.org, t.layer, t.person)
        _, draft = drafts.among(await self._store.layer_drafts(key), t.id)
        if draft is None or draft.state != "open" or draft.commits_at is None:
            return
        if drafts.lapsed(draft, self._clock()):  # the end handled a day late: it expired
            await self._expire(p, draft)
            return
        agent = Principal(org=t.org, sub=t.person, act=draft.act)
        stored, version = await self._store.layer(key)
        applied = stored.change is not None and stored.change.draft == draft.id
        effective = await self._level(p)
        if effective.level != "send" and not applied:
            why = f"your level was lowered to {effective.level} during the window"
        elif version != draft.base and not applied:
            why = f"the layer moved from version {draft.base} to {version} since it was drafted"
        else:
            try:
                await self._commit(agent, draft, "mod.draft.self_commit")
            except Refused as exc:
                if exc.problem.rule == "draft-closed":
                    return  # discarded, or kept, at that moment
                why = str(exc)  # moved between the read and the write
            else:
                return
        await self._store.change_drafts(
            _held_at(t.org, draft),
            lambda held: drafts.waiting(held, draft.id, why),
            record=self._recorded(t.org, None, "mod.draft.wait", draft, why=why),
        )

    async def draft_expiry(self, fired: scheduler.Fired) -> None:
        """Expired, unless it is kept first; one a Keep holds now is asked again shortly
        (a transient failure, redelivered), to expire if that Keep let it go."""
        t = msgspec.convert(fired.payload, DraftTimer)
        key = mod.layer_key(t.org, t.layer, t.person)
        held, draft = drafts.among(await self._store.layer_drafts(key), t.id)
        if draft is None or draft.state != "open":
            return
        if draft.id in held.keeping:
            raise Unavailable(Refused("draft-being-kept", 503, f"{draft.id} is being kept").problem)
        p = Principal(org=t.org, sub=t.person, act=draft.act)
        await self._settle(p, draft, "expired", cancel=False)

    async def _expire(self, p: Principal, draft: mod.LayerDraft) -> mod.LayerDraft | None:
        """A draft past its expiry, found so before its timer (late, or lost with its fire
        parked), expired as the timer would: a Keep after the expiry would otherwise apply
        it. None when a Keep begun before the expiry holds it, to be completed."""
        try:
            return await self._settle(p, draft, "expired")
        except Refused as exc:
            if exc.problem.rule != "draft-closed":
                raise
            return None

    async def _commit(self, p: Principal, draft: mod.LayerDraft, action: str) -> int:
        """Claimed, its ops applied at its base, then kept: a discard or an expiry meanwhile
        is refused. If the layer refused the ops (it moved since), the claim is let go and
        the draft is open as it was; unless another Keep of it applied them first."""
        at = _held_at(p.org, draft)
        await self._store.change_drafts(
            at, lambda held: drafts.claimed(held, draft.id), record=None
        )
        try:
            version = await self._apply(p, draft, action)
        except Refused as exc:
            stored, version = await self._store.layer(
                mod.layer_key(p.org, draft.layer, draft.writer)
            )
            if stored.change is None or stored.change.draft != draft.id:
                if exc.problem.status < 500:
                    await self._store.change_drafts(
                        at, lambda held: drafts.released(held, draft.id), record=None
                    )
                raise
        await self._settle(p, draft, "kept", version=version)
        return version

    async def _apply(self, p: Principal, draft: mod.LayerDraft, action: str) -> int:
        """The draft's ops over the layer, written at the draft's base, once."""
        key = mod.layer_key(p.org, draft.layer, draft.writer)
        stored, version = await self._store.layer(key)
        if stored.change is not None and stored.change.draft == draft.id:
            return version  # applied before a crash or a lost answer: applied once
        change = mod.Change(
            by=p.sub,
            at=self._clock(),
            act=draft.act,
            note=draft.note,
            ops=draft.ops,
            draft=draft.id,
        )
        value = Stored(ops=patches.merged(stored.ops, draft.ops), change=change)
        data = {"ops": ops_data(draft.ops)}
        return await self._write_at(p, draft.layer, key, draft.base, value, action, data, draft.id)

    async def _settle(
        self,
        p: Principal,
        draft: mod.LayerDraft,
        state: str,
        *,
        version: int | None = None,
        cancel: bool = True,
    ) -> mod.LayerDraft:
        action = {"kept": "mod.draft.kept", "discarded": "mod.draft.discard"}.get(
            state, "mod.draft.expire"
        )
        actor = None if state == "expired" else p  # an expiry is no one's act
        _, held = await self._store.change_drafts(
            _held_at(p.org, draft),
            lambda held: drafts.settled(held, draft.id, state, version=version),
            record=self._recorded(p.org, actor, action, draft, state=state),
        )
        if cancel:
            await self._cancel_timers(draft.id)
        settled = drafts.find(held, draft.id)
        assert settled is not None
        return settled

    async def _visible(self, p: Principal, layer: mod.LayerName) -> list[mod.LayerDraft]:
        """The drafts over `layer` the caller may see: whoever can keep them, and the agent
        that wrote each (§9.4 rule 7), which reads only its own writer's key. A member's
        read never touches the org's."""
        key = self._key(p, layer)
        if p.is_agent:
            every = [await self._store.drafts(mod.drafts_key(key, p.sub, p.act))]
        elif may_keep(p, layer):
            every = await self._store.layer_drafts(key)
        else:
            return []
        return [d for held in every for d in (*held.open, *held.closed)]

    async def _find(self, p: Principal, draft_id: str) -> mod.LayerDraft:
        for layer in ("org", "user"):
            found = next((d for d in await self._visible(p, layer) if d.id == draft_id), None)
            if found is not None:
                return found
        raise Refused("draft-not-found", 404, f"you have no draft {draft_id}")

    def _recorded(
        self, org: str, actor: Principal | None, action: str, draft: mod.LayerDraft, **data: object
    ) -> Record:
        """A draft's move, recorded before it is written: by whoever moved it, or by no one
        when its window's end or its expiry did (as a ladder window's end is)."""
        return lambda _before, _after: self._trail.change(
            org,
            actor=actor,
            action=action,
            target=draft.id,
            data={"layer": draft.layer, "base": draft.base, **data},
        )


def _made_by(made: mod.LayerDraft, asked: mod.LayerDraft) -> mod.LayerDraft:
    """The draft made under a key, if it holds the write `asked` holds; another write sent
    with the key is refused."""
    if not drafts.same_write(made, asked):
        raise KeyReused()
    return made


def _held_at(org: str, draft: mod.LayerDraft) -> str:
    """The key of `draft`'s writer's drafts, where it is held."""
    return mod.drafts_key(mod.layer_key(org, draft.layer, draft.writer), draft.writer, draft.act)


def _wrote(p: Principal, draft: mod.LayerDraft) -> bool:
    return p.act is not None and p.act == draft.act and p.sub == draft.writer
