"""One handler per `tether.poa.*` subject: load, ask the domain, record, save, reply."""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import agents, codec, poa
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.runtime import pages
from libs.runtime.kv import Conflict
from libs.runtime.service import Handler, request_digest, request_key
from libs.standing import made_again_at, standing
from services.poa.asking import Asking
from services.poa.domain import ALLOW, ASK_USER, contain, grants, ledger, open_asks, verify
from services.poa.domain.reading import identity, obj
from services.poa.store import ACTS_KEPT_S, GrantStore, LedgerStore

__all__ = ["Handlers"]

Clock = Callable[[], datetime]


class Handlers:
    def __init__(
        self,
        nc: Client,
        grants_: GrantStore,
        ledger_: LedgerStore,
        asking: Asking,
        trail: Trail,
        clock: Clock,
    ):
        self._nc, self._grants, self._ledger, self._trail = nc, grants_, ledger_, trail
        self._clock, self.asking = clock, asking

    async def verify(self, req: poa.VerifyRequest, _: Principal) -> poa.Decision:
        return verify(req.grant, req.parents, req.envelope, req.state)

    async def contain(self, req: poa.ContainRequest, _: Principal) -> poa.Containment:
        return contain(req.parent, req.child)

    async def issue(self, req: poa.IssueGrant, p: Principal) -> poa.GrantRecord:
        record = grants.root(req.grant, p, self._clock(), ask_expires_s=req.ask_expires_s)
        return await self._create(record, p, "poa.grant.issue")

    async def delegate(self, req: poa.DelegateGrant, p: Principal) -> poa.GrantRecord:
        parent = await self._mine(p, req.id)
        parent = grants.held(parent, await self._grants.lineage(parent))
        record = grants.child(parent, req.child, p, self._clock(), ask_expires_s=req.ask_expires_s)
        return await self._create(record, p, "poa.grant.delegate")

    async def list_mine(self, req: poa.ListGrants, p: Principal) -> poa.GrantList:
        mine = await self._grants.of_owner(p.org, p.sub)
        found = sorted(grants.all_held(mine), key=lambda r: r.issued_at)
        if req.after is not None:  # a cursor that is none of theirs pages nothing of theirs
            ids = [r.id for r in found]
            found = found[ids.index(req.after) + 1 :] if req.after in ids else []
        page, more = pages.first(found, req.limit)
        return poa.GrantList(grants=page, next=page[-1].id if more else None)

    async def get(self, req: poa.GrantRef, p: Principal) -> poa.GrantRecord:
        record = await self._mine(p, req.id)
        return grants.held(record, await self._grants.lineage(record))

    async def revoke(self, req: poa.GrantRef, p: Principal) -> poa.GrantRecord:
        mine = await self._grants.of_owner(p.org, p.sub)
        target = next((r for r in mine if r.id == req.id), None)
        if target is None:
            raise Refused("grant-not-found", 404, f"you have no grant {req.id}")
        target, revoked = await self._revoked(target, mine, actor=p)
        # Revoked already (a retry, say), nothing more is recorded; what the first try left
        # of its asks is finished.
        await self.asking.revoked(p, revoked)
        return target

    async def delegate_removed(self, removed: agents.AgentRemoved) -> None:
        """Each grant naming an org's agent or bot its admin removed as its delegate,
        revoked with everything delegated from it, as its person's revocation would be, and
        recorded as the admin's: an agent made again under the id is another agent, and
        acts on none of them. Delivered again, what was revoked is found revoked, and the
        asks still open under it are finished.

        The grants are read once the agent is gone (it is announced before it is deleted;
        told when it was made, `made_again_at`), so that one issued meanwhile is either read
        here or finds it gone when stored (`_delegate_stands`). A removal cut short between
        the two is asked again and announced again; this announcement is then parked, the
        agent standing. Read late, after an agent was made again under the id, the grants
        issued to that one are its own, and stand."""
        since = await made_again_at(self._nc, removed, caller="poa")
        every = await self._grants.of_org(removed.org)
        for owner in sorted({r.owner for r in every}):
            theirs = grants.all_held([r for r in every if r.owner == owner])
            theirs.sort(key=lambda r: r.issued_at)  # a parent before what it delegated
            revoked: set[str] = set()
            for named in theirs:
                if named.id not in revoked and grants.names_removed(named, removed.agent, since):
                    data = {"delegate_removed": removed.agent}
                    _, ids = await self._revoked(named, theirs, actor=removed.by, data=data)
                    revoked |= ids
            if revoked:
                person = Principal(org=removed.org, sub=owner)
                await self.asking.revoked(person, revoked, removal=removed)

    async def _revoked(
        self,
        target: poa.GrantRecord,
        theirs: list[poa.GrantRecord],
        *,
        actor: Principal,
        data: dict[str, str] | None = None,
    ) -> tuple[poa.GrantRecord, set[str]]:
        """The grant revoked, and the ids of it and every descendant among its person's
        grants, each revoked, recorded first unless every one was already; verification
        also reads revocation up the lineage, so a descendant is revoked at once even while
        this loop is still marking it."""
        below = grants.descendants(target.id, theirs)
        if not all(r.revoked for r in [target, *below]):
            now = self._clock()
            recorded = {"descendants": [r.id for r in below], **(data or {})}
            async with self._trail.change(
                target.org, actor=actor, action="poa.grant.revoke", target=target.id, data=recorded
            ):
                for record in [target, *below]:
                    await self._grants.change(record, lambda r: grants.revoked(r, now))
            target = grants.revoked(target, now)
        return target, {r.id for r in [target, *below]}

    async def act(self, req: poa.ActRequest, p: Principal) -> poa.ActOutcome:
        """Decided on the grant's own ledger and every ancestor's, then charged to the whole
        chain in one compare-and-set on the root's ledger. An ASK_USER is put to the person."""
        record = await self._mine(p, req.id)
        codec.bounded("envelope", req.envelope, grants.DOCUMENT_MOST)
        actor = identity(obj(req.envelope.get("invocation")).get("actor"))
        if p.act is None or actor != p.act:
            raise Refused("actor-not-caller", 403, "invocation.actor must be the agent calling")
        lineage = await self._grants.lineage(record)
        chain = [(r.id, r.grant) for r in (*lineage, record)]
        ids = [id_ for id_, _ in chain]
        revoked = record.revoked or any(r.revoked for r in lineage)
        now = self._clock()
        key = request_key()
        request = b"" if key is None else request_digest()
        if key is not None and (done := await self._charged(p, key, request, ids[0], now)):
            books = await self._ledger.read(p.org, p.sub, ids[0], ledger.month_of(now))
            return _outcome(done, books.of(record.id), now, recorded=True)

        # The decision on each ledger read, made once: the change, its record and the answer
        # all ask it of the same books (kept here, so an identity is never reused).
        # A keyed act sent again (its answer lost in a failover) is answered as it was,
        # charging nothing: from the ledger's latest keys, in this change (which then changes
        # nothing, so writes and records nothing), or from poa-acts once the ledger let it go.
        made: list[tuple[ledger.RootLedger, poa.Decision]] = []

        def decided(books: ledger.RootLedger) -> poa.Decision:
            found = next((d for b, d in made if b is books), None)
            if found is None:
                found = ledger.replayed(books, key, request) or ledger.decided(
                    chain, req.envelope, books, now, revoked=revoked
                )
                made.append((books, found))
            return found

        @asynccontextmanager
        async def recorded(
            before: ledger.RootLedger, after: ledger.RootLedger
        ) -> AsyncIterator[object]:
            await self._ledger.keep_acts(p.org, p.sub, ledger.evicted(before, after))
            async with self._trail.change(
                p.org,
                actor=p,
                action="poa.act.record",
                target=record.id,
                data=_data(decided(before)),
            ) as entry:
                yield entry

        before, after = await self._ledger.change(
            p.org,
            p.sub,
            ids[0],
            ledger.month_of(now),
            lambda books: ledger.acted(
                books, decided(books), ids, req.envelope, now, key=key, request=request
            ),
            record=recorded,
        )
        decision = decided(before)  # the books the act was decided on
        if decision.decision == ALLOW:
            return _outcome(decision, after.of(record.id), now, recorded=True)
        await self._trail.append(
            p.org, actor=p, action="poa.act.decide", target=record.id, data=_data(decision)
        )
        asked = None
        if decision.decision == ASK_USER:
            try:
                asked = (await self.asking.put(record, decision, req.envelope, p.act)).id
            except Refused as exc:
                if exc.problem.rule == open_asks.FULL:  # decided, but its person never asked
                    await self._trail.append(
                        p.org,
                        actor=p,
                        action="poa.act.refuse",
                        target=record.id,
                        data={**_data(decision), "refused": exc.problem.rule},
                    )
                raise
        return _outcome(decision, before.of(record.id), now, recorded=False, ask=asked)

    def table(self) -> Mapping[Subject, Handler]:
        return {
            poa.VERIFY: self.verify,
            poa.CONTAIN: self.contain,
            poa.ISSUE: self.issue,
            poa.DELEGATE: self.delegate,
            poa.LIST: self.list_mine,
            poa.GET: self.get,
            poa.REVOKE: self.revoke,
            poa.ACT: self.act,
            poa.ASKS: self.asking.asks,
            poa.ASK: self.asking.ask,
            poa.ANSWER: self.asking.answer,
        }

    async def _charged(
        self, p: Principal, key: str, request: bytes, root_id: str, now: datetime
    ) -> poa.Decision | None:
        """The decision of an act already charged under `key` that its ledger let go: kept in
        poa-acts for a day, or among the latest keys of last month's books when the month
        turned within that day (this month's are read by the change itself)."""
        done = await self._ledger.acted(p.org, p.sub, key)
        month = ledger.month_before(now, timedelta(seconds=ACTS_KEPT_S))
        if done is None and month is not None:
            done = (await self._ledger.read(p.org, p.sub, root_id, month)).keyed.get(key)
        return ledger.answered(done, request)

    async def _mine(self, p: Principal, grant_id: str) -> poa.GrantRecord:
        found = await self._grants.get(p.org, p.sub, grant_id)
        if found is None:
            raise Refused("grant-not-found", 404, f"you have no grant {grant_id}")
        return found

    async def _create(self, record: poa.GrantRecord, p: Principal, action: str) -> poa.GrantRecord:
        """The grant made, recorded before, while the org's agent it names (if it names
        one) stands. Keyed, the grant the same request made before is answered as made: the
        retry of a replica that died before it kept its answer."""
        if request_key() is not None:
            made = await self._grants.get(record.org, record.owner, record.id)
            if made is not None and grants.same_grant(made, record):
                await self._delegate_stands(made, p, stored=True)
                return made
        await self._delegate_stands(record, p, stored=False)
        async with self._trail.change(p.org, actor=p, action=action, target=record.id):
            try:
                await self._grants.create(record)
            except Conflict as exc:
                raise Refused("grant-exists", 409, f"grant {record.id} exists") from exc
        await self._delegate_stands(record, p, stored=True)
        return record

    async def _delegate_stands(
        self, record: poa.GrantRecord, p: Principal, *, stored: bool
    ) -> None:
        """Refuse a grant naming an org's agent or bot that was never made or is removed: it
        would become the agent's made later under that id. Asked again once the grant is
        stored, as a removal meanwhile revokes the grants it finds when the agent is gone,
        which may be before this one was stored; found gone then, the grant is revoked."""
        agent = grants.standing_delegate(record)
        if agent is None or await standing(self._nc, record.org, agent, caller="poa"):
            return
        if stored:
            await self._revoked(record, [record], actor=p, data={"delegate_removed": agent})
        why = f"{record.org} has no agent or bot {agent}: never made, or removed"
        raise Refused("delegate-not-standing", 422, why)


def _outcome(
    decision: poa.Decision,
    month: ledger.Ledger,
    now: datetime,
    *,
    recorded: bool,
    ask: str | None = None,
) -> poa.ActOutcome:
    return poa.ActOutcome(
        decision=decision,
        recorded=recorded,
        spent_month_usd=str(month.spent_usd),
        binding_acts_today=month.binding_on(now),
        ask=ask,
    )


def _data(decision: poa.Decision) -> dict[str, object]:
    return {"decision": decision.decision, "rule_id": decision.rule_id, "act_id": decision.act_id}
