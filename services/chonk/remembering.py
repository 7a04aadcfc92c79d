"""What the Chonks know about people (§6): a run's context read through here only, each
read recorded and shown on the person's knows page; each fact written through §6.2's
table, recorded before it is stored; a person's redaction of a fact about them (§6.4,
§6.5)."""

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from libs.contracts import chonk
from libs.contracts.base import key_token
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from services.chonk.carrying import Carrying
from services.chonk.domain import intents, memory
from services.chonk.domain.types import RoleCharter, SourceRef

__all__ = ["Remembering"]


class Remembering(Carrying):
    _charters: Mapping[str, RoleCharter]  # the roster, set by the class this is part of

    async def knows(self, _: chonk.GetKnows, p: Principal) -> chonk.Knows:
        """§6.4: what the Chonks know about me and still keep, and the latest reads of it,
        each Chonk named by its title."""
        now = self._clock()
        facts = [f for f in await self._store.facts(p.org, p.sub) if memory.held(f, now)]
        reads = await self._store.reads(p.org, p.sub)
        named = {f.written_by_chonk_id for f in facts} | {r.chonk for r in reads}
        return chonk.Knows(
            facts=[_known(f) for f in sorted(facts, key=lambda f: f.id)],
            reads=reads,
            titles={c: self._charters[c].title for c in sorted(named) if c in self._charters},
        )

    async def answer(self, req: chonk.MemoryAnswer, p: Principal) -> chonk.KnownFact:
        """Redaction by the subject (§6.2's last column): gone at once where it may be;
        feedback keeps the person's answer and its deletion becomes the MoR's decision."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a fact about a person is theirs to redact")
        now = self._clock()
        outcome: dict[str, memory.Redacted] = {}

        def redact(fact: memory.MemoryFact | None) -> memory.MemoryFact | None:
            if fact is None or not memory.held(fact, now):
                raise Refused("fact-not-found", 404, f"there is no fact {req.id} about you")
            outcome["done"] = memory.redacted(fact, req.response, now)
            return outcome["done"].fact

        after = await self._store.change_fact(
            p.org,
            p.sub,
            req.id,
            redact,
            now=now,
            record=lambda *_: self._trail.change(
                p.org, actor=p, action="chonk.memory.redact", target=req.id
            ),
        )
        assert after is not None
        if (decision := outcome["done"].decision) is not None:
            # Once for these words, however often they are sent: a retry after a failure
            # here opens the decision, and one after it opens no second.
            said = hashlib.sha256(req.response.encode()).hexdigest()[:32]
            await self._trail.append(
                p.org,
                actor=p,
                action="chonk.decision.open",
                target=req.id,
                data={"decision": decision, "for": "mor"},
                key=f"chonk.decision.open.{key_token(p.org)}.{req.id}.{said}",
            )
        return _known(after)

    async def _remember(self, p: Principal, charter: RoleCharter, text: str) -> chonk.Heard:
        """§10: a person saying "remember" in their thread is their yes to a consideration,
        kept in their own words (never a paraphrase), shared by themself, for §6.2's 90
        days, and theirs to redact on their knows page; what §6.3 never stores is not kept,
        and they are told why. A Chonk §6.2 does not let keep one says which do."""
        now, heard = self._clock(), intents.heard(p.sub, text)
        writers = memory.KINDS["consideration"].writers
        if charter.chonk_id not in writers:
            keepers = " or ".join(self._charters[c].title for c in sorted(writers))
            said = (
                "I don't keep what to plan around. The "
                f'{keepers} does: tell it there, beginning with "remember", and it keeps '
                "it in your words."
            )
            pointed = await self._reply(p, charter, said, f"unkept-{heard}")
            return chonk.Heard(intent="remember", delivered=[pointed])
        fact = memory.MemoryFact(
            id=f"mem_{heard}",
            tenant_id=p.org,
            subject_id=p.sub,
            kind="consideration",
            content=text,
            source=SourceRef(n=0, kind="message", ref=heard, label="your message", as_of=now),
            shared_by="self",
            written_by_run_id=heard,
            written_by_chonk_id=charter.chonk_id,
            used_for=("scheduling", "brief_timing"),
        )
        try:
            stored = memory.committed(
                fact, writer=charter.chonk_id, manages=True, consent=True, now=now
            )
        except memory.MemoryRefused as exc:
            said = f"I haven't kept that: {exc}."
            refused = await self._reply(p, charter, said, f"unkept-{heard}")
            return chonk.Heard(intent="remember", delivered=[refused])

        def kept_once(before: memory.MemoryFact | None) -> memory.MemoryFact:
            """Said again, it is as it was (nothing written, nothing recorded); taken back,
            it is kept anew."""
            return before if before is not None and before.redacted_at is None else stored

        await self._store.change_fact(
            p.org, p.sub, fact.id, kept_once, now=now,
            record=lambda _, __: self._trail.change(
                p.org, actor=p, action="chonk.memory.write", target=p.sub,
                data={"fact": fact.id, "kind": fact.kind},
            ),
        )  # fmt: skip
        kept = memory.KINDS["consideration"].keep
        assert kept is not None
        said = (
            f"Kept, in your words, for {kept.days} days, and I'll plan around it. It's on "
            "your knows page, where you can take it back any time."
        )
        replied = await self._reply(p, charter, said, f"kept-{heard}")
        return chonk.Heard(intent="remember", delivered=[{**replied, "fact": fact.id}])

    async def _fixtures(self, p: Principal, fixtures: list[dict[str, Any]]) -> None:
        """A simulation tenant's memory, stored once, each fact as if written
        `writtenDaysAgo` (0 unless given): one past its retention is not stored at all."""
        now = self._clock()
        for f in fixtures:
            written = now - timedelta(days=f.get("writtenDaysAgo", 0))
            fact = memory.MemoryFact(
                id=f["id"],
                tenant_id=p.org,
                subject_id=f["subject"],
                kind=f["kind"],
                content=f["content"],
                source=SourceRef(
                    n=0,
                    kind="memory",
                    ref=f"fixture:{f['id']}",
                    label="simulation fixture",
                    as_of=written,
                ),
                shared_by="chonk",
                written_by_run_id="fixture",
                written_by_chonk_id=f["writer"],
                used_for=tuple(f.get("usedFor", ())),
                evidence=(
                    SourceRef(n=0, kind="message", ref="fixture", label="fixture", as_of=written),
                ),
            )
            stored = memory.committed(
                fact, writer=f["writer"], manages=True, consent=True, now=written
            )
            if memory.held(stored, now):
                await self._store.change_fact(
                    p.org, fact.subject_id, fact.id, lambda old, s=stored: old or s, now=now
                )

    async def _context(self, p: Principal, r: dict[str, Any]) -> dict[str, Any]:
        """§5.2, for a run about one person: their facts, read through here only, each
        read recorded before it is made and shown on their knows page."""
        subject, chonk_id, now = r["subject"], r["chonk"], self._clock()
        facts = await self._store.facts(p.org, subject)
        readable = [
            f
            for f in facts
            if f.redacted_at is None
            and memory.held(f, now)
            and (chonk_id == "human" or not f.kind.startswith(("feedback_", "growth_plan")))
            and f.kind != "owner_report"
        ]
        read = chonk.MemoryRead(
            at=now,
            chonk=chonk_id,
            run=r["id"],
            purpose=r.get("purpose", ""),
            facts=[f.id for f in readable],
        )
        await self._trail.append(
            p.org,
            actor=p,
            action="chonk.memory.read",
            target=subject,
            data={"run": r["id"], "facts": read.facts},
        )
        await self._store.read_by(p.org, subject, read)
        return {
            "subject": subject,
            "memory": [{"id": f.id, "kind": f.kind, "content": f.content} for f in readable],
        }

    async def _owner_reports(
        self, p: Principal, r: dict[str, Any], people: dict[str, str], outcome: Any
    ) -> list[str]:
        """§6.5: anything written to the owner about a person is that person's owner_report,
        in the same commit, recorded like any other write."""
        reports = memory.owner_reports(
            outcome.draft.body,
            people,
            source=_source(outcome.receipt.id, self._clock()),
            run=r["id"],
            tenant=p.org,
        )
        for fact in reports:
            await self._commit(p, fact, writer="executor")
        return [f.id for f in reports]

    async def _write(
        self, p: Principal, r: dict[str, Any], w: dict[str, Any], chonk_id: str, receipt: str
    ) -> str:
        """§6.5: at memory.commit, filtered through the table, recorded before it is stored."""
        fact = memory.MemoryFact(
            id=f"mem_{r['id']}_{w['kind']}",
            tenant_id=p.org,
            subject_id=r["subject"],
            kind=w["kind"],
            content=w["content"],
            source=_source(receipt, self._clock()),
            shared_by="chonk",
            written_by_run_id=r["id"],
            written_by_chonk_id=chonk_id,
        )
        await self._commit(p, fact, writer=w["writer"])
        return fact.id

    async def _commit(self, p: Principal, fact: memory.MemoryFact, *, writer: str) -> None:
        """A fact through §6.2's table, recorded, then stored."""
        now = self._clock()
        try:
            stored = memory.committed(fact, writer=writer, manages=True, consent=False, now=now)
        except memory.MemoryRefused as exc:
            raise Refused("memory-refused", 422, str(exc)) from exc
        async with self._trail.change(
            p.org,
            actor=p,
            action="chonk.memory.write",
            target=fact.subject_id,
            data={"fact": fact.id, "kind": fact.kind},
        ):
            await self._store.change_fact(
                p.org, fact.subject_id, fact.id, lambda _: stored, now=now
            )


def _source(receipt: str, now: datetime) -> SourceRef:
    return SourceRef(n=0, kind="message", ref=receipt, label="this run", as_of=now)


def _known(f: memory.MemoryFact) -> chonk.KnownFact:
    return chonk.KnownFact(
        id=f.id,
        kind=f.kind,
        content="" if f.redacted_at else f.content,
        visibility=f.visibility,
        written_by=f.written_by_chonk_id,
        used_for=list(f.used_for),
        expires_at=f.expires_at,
        response=f.subject_response,
        redacted=f.redacted_at is not None,
    )
