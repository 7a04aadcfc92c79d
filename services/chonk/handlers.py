"""One handler per `tether.chonk.*` subject, and what the bus hands the Chonks: a run an
admin starts, its report, an answer to a Chonk's question, a proposal's lapse, a handoff
to judge, a person's message to a Chonk, and a decider's packets. A run itself is
`running.py`'s, a cadence `cadencing.py`'s, a person's knows page and their answer to a
fact about them `remembering.py`'s, what a run carries out `carrying.py`'s, a call-out
`covering.py`'s and a dispute of what a Chonk said `disputing.py`'s."""

import contextlib
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec
from prometheus_client import Counter

from libs.contracts import chonk, rooms, scheduler
from libs.contracts.chonk import CHONK_BOT, CONTRACT
from libs.contracts.principal import Principal
from libs.contracts.problem import KEY_REUSED, Refused, Unavailable
from libs.contracts.registry import Subject
from libs.runtime import pages
from libs.runtime.calls import call
from libs.runtime.kv import Conflict
from libs.runtime.service import Handler, request_key
from services.chonk.cadencing import Cadencing
from services.chonk.carrying import Lapse
from services.chonk.declining import PACKET, Declining
from services.chonk.disputing import Disputing
from services.chonk.domain import handoffs, intents, tone
from services.chonk.domain.types import RoleCharter
from services.chonk.running import tenant_for
from services.chonk.simulations import exists, tenant

__all__ = ["Handlers"]

HEARD = Counter(
    "tether_chonk_heard",
    "Messages a person wrote to a Chonk, by what it read them as (RC-MGR-02's 'that's not "
    "true' replies per 1,000 messages: disputed over all).",
    ["chonk", "intent"],
)


class Handlers(Cadencing, Disputing, Declining):
    async def start(self, req: chonk.StartRun, p: Principal) -> chonk.RunReport:
        data = tenant_for(req.tenant, p, "starts a Chonk's run")
        spec = data["runs"].get(req.run)
        if spec is None:
            raise Refused("run-not-found", 404, f"{req.tenant} has no run {req.run}")
        run_id = spec["run"]["id"]
        try:
            return await self._run(p, data, spec, run_id=run_id, trigger="objective")
        except Refused as exc:
            if exc.problem.rule != KEY_REUSED:
                raise
            # A simulation's run has one id: asked again in another voice, its message is
            # in other words than the one the rooms hold under it.
            raise Refused(
                "run-told-otherwise",
                409,
                f"{run_id} told its message before, in other words (its Chonk's voice changed "
                "since?): a run's message is told once",
            ) from exc

    async def decided(self, room: str, seq: int, choice: rooms.Choice) -> None:
        """An answer to one of the Chonks' questions (only the person asked can answer
        it), to whichever asked it: a chase's, a shift's offer, or a proposal's."""
        if (chased := await self._store.chased(room, seq)) is not None:
            await self._chase_answered(chased, choice)
        elif (offer := await self._store.offer(room, seq)) is not None:
            await self._offer_answered(offer, choice)
        elif (held := await self._store.proposal(room, seq)) is not None:
            try:
                await self._proposal_answered(room, seq, held, choice)
            except Refused as exc:
                if exc.problem.status < 500:  # refused again if asked again
                    await self._proposal_undone(room, seq)
                raise

    async def undone(self, room: str, seq: int, choice: rooms.Choice) -> None:
        """Every try to carry out an answer to one of the Chonks' questions failed. A shift
        offer's yes carries on, so the worker, the reporter and the swap are told once the
        rooms take it: it holds the shift, and the escalation, finding it taken, tells no
        one. A proposal's decider is told it was not done. (A chase's answer is asked
        again by its next stage.)"""
        if (offer := await self._store.offer(room, seq)) is not None:
            await self._offer_answered(offer, choice)
        else:
            await self._proposal_undone(room, seq)

    async def proposal_closed(self, fired: scheduler.Fired) -> None:
        """A proposal's question closed. An answer the room took in time is carried out, as
        its event (not read yet) would carry it out; unanswered, the proposal lapses,
        recorded as no one's act, and is let go: nothing is carried out."""
        lapse = msgspec.convert(fired.payload, Lapse)
        held = await self._store.proposal(lapse.room, lapse.seq)
        if held is None:
            return  # answered, or said undone
        org = held.org
        asked = rooms.FindAnswer(org=org, room=lapse.room, person=held.decider, seq=lapse.seq)
        found = await self._of_room(rooms.ANSWER_OF, asked)  # None: its room gone, no answer
        if found is not None and found.choice is not None:
            await self.decided(lapse.room, lapse.seq, found.choice)
            return
        async with self._trail.change(
            org, actor=None, action="chonk.proposal.lapse", target=held.key
        ):
            await self._store.drop_proposal(lapse.room, lapse.seq)

    async def received(self, request: chonk.HandoffRequest) -> None:
        """The receiver's first check (§8's table and its conditions, read from what the
        tenant knows of the subject), then its answer on the bus. An accepted handoff is a
        run of the receiver's, triggered HANDOFF on the same correlation id; a pair that
        disagreed twice goes to Chonksworth's triage."""
        try:
            data = tenant(request.tenant_id)
        except FileNotFoundError:
            return  # no tenant of this name to judge it by
        seen = data.get("signals", {}).get(next(iter(request.subject_refs), ""), {})
        decision = handoffs.admitted(
            request,
            ladder_stage=seen.get("ladderStage", 0),
            stalls_30d=seen.get("stalls30d", 0),
            said=seen.get("said", False),
        )
        decided = chonk.HandoffDecided(
            request=request, accepted=decision.accepted, reason=decision.reason
        )
        me = Principal(org=request.tenant_id, sub=f"service:{CONTRACT.name}")
        action = "chonk.handoff.accept" if decision.accepted else "chonk.handoff.decline"
        if not await self._store.judged(request):  # else delivered again: recorded once
            # A delivery judging it at the same time loses the create, and its record says
            # it failed: one decision is recorded, whatever the deliveries.
            with contextlib.suppress(Conflict):
                async with self._trail.change(
                    request.tenant_id, actor=me, action=action, target=request.id,
                    data={"reason": decision.reason},
                ):  # fmt: skip
                    if decision.accepted:
                        await self._store.put_accept(request)
                    else:
                        await self._store.put_decline(request)
        event = chonk.HANDOFF_ACCEPTED if decision.accepted else chonk.HANDOFF_DECLINED
        await self._publish(request.tenant_id, event.name, decided, f"decided-{request.id}")
        if decision.accepted:
            await self._receive(me, data, request)
            return
        declines = await self._store.declines(request.tenant_id)
        pair = tuple(sorted((request.from_chonk, request.to_chonk)))
        if pair in handoffs.to_triage(declines):
            ids = sorted(
                d.id for d in declines if tuple(sorted((d.from_chonk, d.to_chonk))) == pair
            )
            triage = chonk.Triage(tenant=request.tenant_id, pair=pair, handoffs=ids)  # type: ignore[arg-type]
            await self._publish(
                request.tenant_id, chonk.TRIAGE_OPENED.name, triage, f"triage-{'-'.join(ids)}"
            )

    async def _receive(
        self, me: Principal, data: dict[str, Any], request: chonk.HandoffRequest
    ) -> None:
        """The receiver's run for an accepted handoff: the tenant's run that takes this
        kind of handoff about this person, once."""
        subject = next(iter(request.subject_refs), "")
        if request.context_bundle_ref.startswith(PACKET):  # EC-MGR-001's and -005's
            kind = request.context_bundle_ref.removeprefix(PACKET)
            await self._offer_packet(data, subject, kind, request.receipt_id)
            return
        wanted = {"from": request.from_chonk, "reason": request.reason, "subject": subject}
        spec = next(
            (
                s
                for s in data["runs"].values()
                if s["run"]["chonk"] == request.to_chonk and s.get("onHandoff") == wanted
            ),
            None,
        )
        if spec is None:
            return  # the tenant has no run for it: the acceptance is the answer
        await self._once(
            me, data, spec, run_id=spec["run"]["id"], trigger="handoff",
            correlation=request.correlation_id, handoff=request,
        )  # fmt: skip

    async def chonks(self, _: chonk.ListChonks, p: Principal) -> chonk.ChonkList:
        if not exists(p.org):
            return chonk.ChonkList(chonks=[])  # the org runs no Chonk here
        skins = (await self._voice(p.org, tenant(p.org))).chonks
        return chonk.ChonkList(
            chonks=[
                chonk.ChonkTitle(id=c.chonk_id, title=c.title, name=skins[c.chonk_id].name or "")
                for c in self._charters.values()
            ]
        )

    async def voice(self, _: chonk.GetVoice, p: Principal) -> chonk.Voice:
        return await self._voice(p.org, tenant_for(p.org, p, "reads its Chonks' voice"))

    async def set_voice(self, req: chonk.SetVoice, p: Principal) -> chonk.Voice:
        """The org's voice, whole, recorded first; a run after it speaks in it. Every
        fault is named, and nothing is stored while one is."""
        data = tenant_for(p.org, p, "sets its Chonks' voice")
        faults = tone.faults(req.tone) + [
            f"chonks.{c}: {p.org} has no Chonk {c}"
            for c in sorted(req.chonks)
            if c not in self._charters
        ]
        if faults:
            raise Refused("invalid-voice", 422, "; ".join(faults))

        def record(
            _: object, after: chonk.SetVoice
        ) -> contextlib.AbstractAsyncContextManager[object]:
            return self._trail.change(
                p.org, actor=p, action="chonk.voice.set", data=msgspec.to_builtins(after)
            )

        await self._store.set_voice(p.org, req, record=record)
        return await self._voice(p.org, data)

    async def message(self, req: chonk.ToChonk, p: Principal) -> chonk.Heard:
        """A person's message to one of their org's Chonks (IC_MESSAGE), stored in their
        thread with it and read as `_heard` reads it."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a person writes to their Chonks themselves")
        charter = self._charters.get(req.chonk)
        if charter is None:
            raise Refused("chonk-not-found", 404, f"there is no Chonk {req.chonk}")
        try:
            data = tenant(p.org)
        except FileNotFoundError:
            raise Refused("tenant-not-found", 404, f"no simulation tenant {p.org}") from None
        # In their thread first, as theirs: what the Chonk answers there follows what they
        # said. Each request is a message, stored once under its Idempotency-Key as rooms'
        # own send is; what the Chonk does is done once for the same words (`_read`).
        key = request_key()
        said = rooms.Said(
            org=p.org, person=p.sub, bot=f"{CHONK_BOT}{charter.chonk_id}", title=charter.title,
            text=req.text, key=f"said-{intents.digest(p.sub, key or secrets.token_hex(16))}",
        )  # fmt: skip
        try:
            await call(self._nc, rooms.SAID, said, caller=CONTRACT.name)
        except Unavailable:
            # Read all the same (a call-out's escalation is timed before anyone is texted),
            # and answered 503: asked again, the words are stored, and what was done is
            # found done (each answer is keyed by who said what).
            await self._read(p, data, charter, req.text)
            raise
        return await self._read(p, data, charter, req.text)

    async def written(self, to_bot: rooms.BotMessage) -> None:
        """What a person wrote in the room they share with a Chonk, read as a message to it:
        the thread is where §12's tests send their phrases."""
        mine = f"bot:{to_bot.org}:{CHONK_BOT}"
        charter = None
        if to_bot.bot.startswith(mine):
            charter = self._charters.get(to_bot.bot.removeprefix(mine))
        if charter is None or not exists(to_bot.org):
            return  # another service's bot, or an org that runs no Chonk here
        ref = rooms.BotMessageRef(org=to_bot.org, room=to_bot.room, seq=to_bot.seq)
        said = await self._of_room(rooms.BOT_MESSAGE_READ, ref)
        if said is None:
            return  # its room gone
        p = Principal(org=to_bot.org, sub=said.author)
        replying = (said.room, said.reply_to) if said.reply_to is not None else None
        await self._read(p, tenant(to_bot.org), charter, said.text, replying)

    async def _of_room(self, subject: Subject, request: msgspec.Struct) -> Any:
        """What the rooms answer, or None where they refuse (the room gone); a transient
        failure is raised, to be asked again."""
        try:
            return await call(self._nc, subject, request, caller=CONTRACT.name)
        except Refused as exc:
            if exc.problem.status >= 500:
                raise
            return None

    async def _read(
        self,
        p: Principal,
        data: dict[str, Any],
        charter: RoleCharter,
        text: str,
        replying: tuple[str, int] | None = None,
    ) -> chonk.Heard:
        """What `text` is read as, and done: `replying` the Chonk's message it answers in
        the thread, where it names one."""
        heard = await self._heard(p, data, charter, text, replying)
        HEARD.labels(charter.chonk_id, heard.intent).inc()
        return heard

    async def _heard(
        self,
        p: Principal,
        data: dict[str, Any],
        charter: RoleCharter,
        text: str,
        replying: tuple[str, int] | None,
    ) -> chonk.Heard:
        """The first of these it is: WHY after a text (§7); a call-out to the Chief
        Operating Orca, covered (EC-MGR-009); what the Chonk told them said not to be so,
        met with its receipt (RC-MGR-02); "remember", kept in their words (§10); a
        question a person decides, who does (EC-MGR-001); a ranking of people, declined
        (EC-MGR-004); anonymous feedback, not kept (EC-MGR-005). Anything else is read as
        nothing here yet."""
        if intents.WHY.search(text):
            return await self._why(p, charter, text, replying)
        if charter.chonk_id == "ops" and intents.CALL_OUT.search(text):
            return await self._call_out(p, data, charter, text)
        if intents.DISPUTE.search(text):
            return await self._disputed(p, charter, text, replying)
        if intents.REMEMBER.search(text):
            return await self._remember(p, charter, text)
        if (decision := intents.human_decision(text)) is not None:
            return await self._human_decision(p, data, charter, decision, text)
        if intents.RANKING.search(text):
            return await self._ranking(p, data, charter, text)
        if intents.ANONYMOUS.search(text):
            return await self._anonymous(p, data, charter, text)
        return chonk.Heard(intent="none")

    async def packets(self, req: chonk.ListPackets, p: Principal) -> chonk.PacketList:
        """The HUMAN_ONLY packets the caller decides; no one else's are read."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a packet is for the person who decides it")
        found = await self._store.packets(p.org, p.sub)
        if req.state is not None:
            found = [f for f in found if (f.decided_at is None) == (req.state == "open")]
        if req.after is not None:  # a cursor that is none of theirs pages nothing of theirs
            ids = [packet.id for packet in found]
            found = found[ids.index(req.after) + 1 :] if req.after in ids else []
        page, more = pages.first(found, req.limit)
        return chonk.PacketList(packets=page, next=page[-1].id if more else None)

    async def decided_packet(self, req: chonk.PacketDecided, p: Principal) -> chonk.Packet:
        """Its decider says they have decided (§2: a packet is a decision record; what
        they decided happens outside): recorded first, once, and it leaves what waits on
        them. Said again, it is as it was."""
        if p.is_agent:
            raise Refused("agent-may-not", 403, "a packet is for the person who decides it")
        now = self._clock()

        def decided(packet: chonk.Packet | None) -> chonk.Packet:
            if packet is None:  # none of theirs: another's is never read
                raise Refused("packet-not-found", 404, f"you decide no packet {req.id}")
            if packet.decided_at is not None:
                return packet
            return msgspec.structs.replace(packet, decided_at=now)

        after = await self._store.change_packet(
            p.org, p.sub, req.id, decided,
            record=lambda _, __: self._trail.change(
                p.org, actor=p, action="chonk.packet.decide", target=req.id
            ),
        )  # fmt: skip
        assert after is not None
        await self._nudge(p.org, p.sub)
        return after

    async def report(self, req: chonk.RunRef, p: Principal) -> chonk.RunReport:
        found = await self._store.report(p.org, req.id) if "admin" in p.roles else None
        if found is None:
            raise Refused("run-not-found", 404, f"no run {req.id}")
        disputed = await self._store.disputed(p.org, req.id)
        return msgspec.structs.replace(found, disputed=disputed[_ran(found)])

    async def runs(self, req: chonk.ListRuns, p: Principal) -> chonk.RunList:
        """The org's runs, for an admin of it (as a run's report is)."""
        if p.is_agent or "admin" not in p.roles:
            raise Refused("admin-only", 403, f"only an admin of {p.org} reads its runs")
        found, disputed = await self._store.listed(p.org), await self._store.disputed(p.org)
        if req.after is not None:  # a cursor that is none of the org's pages nothing
            ids = [run.id for run in found]
            found = found[ids.index(req.after) + 1 :] if req.after in ids else []
        summaries = [
            chonk.RunSummary(
                id=r.id,
                chonk=r.chonk,
                title=self._charters[r.chonk].title if r.chonk in self._charters else r.chonk,
                trigger=r.trigger,
                at=msgspec.convert(r.ran, datetime),
                correlation=r.correlation,
                disputed=disputed[(r.id, r.ran)],
            )
            for r in found
        ]
        page, more = pages.first(summaries, req.limit)
        return chonk.RunList(runs=page, next=page[-1].id if more else None)

    def table(self) -> Mapping[Subject, Handler]:
        return {
            chonk.START: self.start,
            chonk.CADENCE: self.cadence,
            chonk.CADENCES: self.list_cadences,
            chonk.STOP_CADENCE: self.stop_cadence,
            chonk.REPORT: self.report,
            chonk.RUNS: self.runs,
            chonk.KNOWS: self.knows,
            chonk.ANSWER: self.answer,
            chonk.PACKETS: self.packets,
            chonk.DECIDED: self.decided_packet,
            chonk.MESSAGE: self.message,
            chonk.CHONKS: self.chonks,
            chonk.VOICE: self.voice,
            chonk.SET_VOICE: self.set_voice,
        }


def _ran(report: chonk.RunReport) -> tuple[str, str]:
    """A run as its review items name it: a run asked again is another's."""
    return report.id, report.receipt["createdAt"]
