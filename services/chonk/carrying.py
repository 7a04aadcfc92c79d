"""A run's ProposedActions carried out by class (§1): AUTONOMOUS at once, PROPOSE_CONFIRM
after its decider's yes, HUMAN_ONLY as a packet for the one who decides. A message is told in
the room the Chonk shares with its recipient; a follow-up starts the chaser's ladder, each
stage a timer on the scheduler; a handoff is data on the bus; any other action is published
for the connector that performs it. Each is recorded before it happens."""

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from datetime import datetime
from functools import partial
from typing import Any

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import chonk, codec, pending, rooms, scheduler
from libs.contracts.base import key_token
from libs.contracts.chonk import CHONK_BOT, CONTRACT
from libs.contracts.principal import Principal
from libs.runtime import logs
from libs.runtime.calls import call
from services.chonk.domain import ladder, proposals
from services.chonk.domain.types import ProposedAction, RoleCharter
from services.chonk.store import Asked, Chased, ChaseState, ChonkStore, Proposal

__all__ = ["CHASE", "LAPSE", "UNDONE", "Carrying", "Lapse", "bot", "told", "waiting"]

CHASE = "chase"
LAPSE = "proposal_lapse"
UNDONE = (
    "I could not finish what you approved here, so take it as not done. "
    "Ask me again if it still matters."
)

Clock = Callable[[], datetime]


class Lapse(msgspec.Struct, frozen=True):
    """A proposal's question, timed to lapse as it closes."""

    room: str
    seq: int


class Carrying:
    def __init__(self, nc: Client, store: ChonkStore, trail: Trail, clock: Clock) -> None:
        self._nc, self._js, self._store = nc, nc.jetstream(), store
        self._trail, self._clock = trail, clock

    async def _tell(self, action: ProposedAction, message: rooms.Tell) -> dict[str, Any]:
        """An AUTONOMOUS message: the Chonk, a bot of the tenant, tells its recipient in the
        room the two share."""
        sent = await self._send(message)
        return {"kind": action.kind, "to": message.person, "room": sent.room, "seq": sent.seq}

    async def _chase(self, action: ProposedAction, chase: ladder.Chase) -> dict[str, Any]:
        """§3.3's stage 1 timed: due after its wait in the tenant's business hours."""
        timer = await self._stage_timer(chase, self._clock())
        return {
            "kind": action.kind,
            "to": chase.owner,
            "timer": timer.key,
            "due_at": timer.due_at.isoformat(),
        }

    async def _stage_timer(self, chase: ladder.Chase, after: datetime) -> scheduler.Schedule:
        due = ladder.stage_due(after, ladder.STAGES[chase.stage], chase.hours)
        key = f"chase.{chase.org}.{chase.run}.{chase.stage}"  # a run's id is its org's own
        return await self._timed(
            scheduler.Schedule(key=key, due_at=due, target=CHASE, payload=chase)
        )

    async def _timed(self, timer: scheduler.Schedule) -> scheduler.Schedule:
        """`timer` on the one engine (scheduling a pending key again replaces it)."""
        await call(self._nc, scheduler.SCHEDULE, timer, caller=CONTRACT.name)
        return timer

    async def stage_due(self, fired: scheduler.Fired) -> None:
        """A stage's timer fired. The stage is claimed first (a redelivery, even one handled
        at the same time, finds it taken); unless someone the chase asked has answered, it
        times the next stage and says what this one says, recorded first."""
        chase = msgspec.convert(fired.payload, ladder.Chase)
        await self._answered_meanwhile(chase)

        def claim(state: ChaseState) -> ChaseState:
            if state.taken >= chase.stage:  # a redelivery of a stage already said
                return state
            if state.answered_by is not None:
                return msgspec.structs.replace(state, ended=True)
            return msgspec.structs.replace(state, taken=chase.stage)

        def ending(_: ChaseState, after: ChaseState) -> AbstractAsyncContextManager[object]:
            """The end recorded as the chase ends, never after it (a failure between would
            leave an ended chase no redelivery records); a stage's claim is recorded as it
            is said."""
            if not after.ended:
                return nullcontext()
            return self._trail.change(
                chase.org, actor=bot(chase.org, chase.chonk), action="chonk.chase.end",
                target=chase.run, data={"stage": chase.stage, "answered_by": after.answered_by},
            )  # fmt: skip

        before, _ = await self._store.change_chase(chase.org, chase.run, claim, record=ending)
        if before.taken >= chase.stage or before.answered_by is not None:
            return
        try:
            # The next stage timed first: a stage that cannot be said (the rooms away past
            # every try) still leaves the chase climbing to the manager of record.
            if chase.stage + 1 < len(ladder.STAGES):
                after = msgspec.structs.replace(chase, stage=chase.stage + 1)
                # Its wait counted from when this stage is said: from now, if this one
                # comes late (a due time in the past is refused, and would stop the chase).
                await self._stage_timer(after, max(fired.due_at, self._clock()))
            await self._say(chase)
        except BaseException:  # the stage is not taken: its redelivery takes it
            await self._store.change_chase(
                chase.org, chase.run, lambda s: msgspec.structs.replace(s, taken=before.taken)
            )
            raise

    async def _answered_meanwhile(self, chase: ladder.Chase) -> None:
        """An answer to one of the chase's questions whose event is not read yet (behind,
        or the service away across this stage's due time), taken first: the room took it,
        so it was given before this stage, which would otherwise chase someone who had
        answered, or escalate past them."""
        state = await self._store.chase(chase.org, chase.run)
        if state.answered_by is not None or state.taken >= chase.stage:
            return
        for asked in state.asked:
            question = rooms.FindAnswer(
                org=chase.org, room=asked.room, person=asked.person, seq=asked.seq
            )
            found: rooms.FoundAnswer = await call(
                self._nc, rooms.ANSWER_OF, question, caller=CONTRACT.name
            )
            if found.choice is not None:
                chased = Chased(org=chase.org, run=chase.run, asked=asked.person)
                await self._chase_answered(chased, found.choice)
                return

    async def _say(self, chase: ladder.Chase) -> None:
        said = ladder.said(chase)
        async with self._trail.change(
            chase.org, actor=bot(chase.org, chase.chonk), action="chonk.chase.stage",
            target=chase.run, data={"stage": chase.stage, "to": [s.person for s in said]},
        ):  # fmt: skip
            for i, s in enumerate(said):
                key = f"chase-{chase.run}-{chase.stage}-{i}"
                sent = await self._send(
                    told(chase.org, chase.chonk, chase.title, s.person, s.text, key, s.options)
                )
                if s.options:
                    chased = Chased(org=chase.org, run=chase.run, asked=s.person)
                    await self._store.put_chased(sent.room, sent.seq, chased)
                    asked = Asked(room=sent.room, seq=sent.seq, person=s.person)
                    await self._store.change_chase(chase.org, chase.run, partial(_noted, asked))

    async def _propose(
        self,
        action: ProposedAction,
        held: Proposal,
        question: rooms.Tell,
        *,
        to: str | None,
    ) -> dict[str, Any]:
        """PROPOSE_CONFIRM: the action waits for its decider's yes, asked in the room the
        decider shares with the Chonk; nothing is carried out until then. Its question
        closes `proposals.OPEN_FOR` after it opened, and a timer then lets it lapse."""
        opened = await self._store.opened(held.org, held.key, self._clock())
        closes_at = opened + proposals.OPEN_FOR
        asked = await self._send(msgspec.structs.replace(question, closes_at=closes_at))
        await self._store.put_proposal(asked.room, asked.seq, held)
        lapse = Lapse(room=asked.room, seq=asked.seq)
        key = f"proposal.{held.org}.{held.key}"
        lapse_timer = scheduler.Schedule(key=key, due_at=closes_at, target=LAPSE, payload=lapse)
        await self._timed(lapse_timer)
        return {
            "kind": action.kind,
            "to": to,
            "class": "PROPOSE_CONFIRM",
            "decider": question.person,
            "room": asked.room,
            "seq": asked.seq,
            "closes_at": closes_at.isoformat(),
        }

    async def _proposal_answered(
        self, room: str, seq: int, held: Proposal, choice: rooms.Choice
    ) -> None:
        """A proposal's yes carries it out, once, by its key; anything else carries out
        nothing; recorded either way, once: its answer's event and its lapse may both find
        it held, and an event is delivered again after a failure."""
        approved = isinstance(choice, rooms.Pick) and choice.option == 0
        action = "chonk.proposal.approve" if approved else "chonk.proposal.decline"
        org = held.org
        decider = Principal(org=org, sub=held.decider)
        once = f"{action}.{key_token(org)}.{key_token(held.key)}"
        async with self._trail.change(org, actor=decider, action=action, target=held.key, key=once):
            if approved and held.packet is not None:
                await self._open(msgspec.structs.replace(held.packet, opened_at=self._clock()))
            if approved and held.tell is not None:
                sent = await self._send(held.tell)
                if held.offer is not None:
                    await self._store.put_offer(sent.room, sent.seq, held.offer)
                if held.why is not None:
                    asker, _ = _asker(held)
                    await self._store.put_why(org, held.tell.person, asker, held.why)
            elif approved and held.chase is not None:
                await self._stage_timer(held.chase, self._clock())
            elif approved and held.ready is not None:
                ready = msgspec.structs.replace(held.ready, approved_by=held.decider)
                await self._publish(held.org, chonk.ACTION_READY.name, ready, f"ready-{held.key}")
        await self._store.drop_proposal(room, seq)

    async def _proposal_undone(self, room: str, seq: int) -> None:
        """A proposal's yes whose carrying out was refused, or failed every try (its
        approval's `.failed` record says why): its decider is told so, by the Chonk that
        asked, in the room it asked them in, and the proposal is let go, so no later answer
        carries it out. Otherwise they would take what they approved as done."""
        held = await self._store.proposal(room, seq)
        if held is None:
            return  # carried out, declined, or no proposal's question
        org, (chonk_id, title) = held.org, _asker(held)
        await self._send(told(org, chonk_id, title, held.decider, UNDONE, f"undone-{held.key}"))
        await self._store.drop_proposal(room, seq)

    async def _chase_answered(self, chased: Chased, choice: rooms.Choice) -> None:
        def answered(state: ChaseState) -> ChaseState:
            first = state.answered_by or chased.asked
            return msgspec.structs.replace(state, answered_by=first)

        # Recorded before the chase is over, as its answer: once over, an answer delivered
        # again changes nothing, so a record written after could be lost for good.
        await self._store.change_chase(
            chased.org, chased.run, answered,
            record=lambda _, __: self._trail.change(
                chased.org, actor=Principal(org=chased.org, sub=chased.asked),
                action="chonk.chase.answer", target=chased.run,
                data={"choice": msgspec.to_builtins(choice)},
            ),
        )  # fmt: skip

    async def _ready(
        self, action: ProposedAction, ready: chonk.ActionReady, key: str
    ) -> dict[str, Any]:
        """An AUTONOMOUS action no one here performs: published for its connector, once."""
        async with self._trail.change(
            ready.tenant, actor=bot(ready.tenant, ready.chonk), action="chonk.action.ready",
            target=key, data={"kind": action.kind},
        ):  # fmt: skip
            await self._publish(ready.tenant, chonk.ACTION_READY.name, ready, f"ready-{key}")
        return {"kind": action.kind, "to": action.to, "published": chonk.ACTION_READY.name}

    async def _packet(self, action: ProposedAction, packet: chonk.Packet, title: str) -> dict:
        """HUMAN_ONLY: a decision record for its decider, under its own access control and
        never in memory; the decider is told it waits, not what it says."""
        await self._open(packet)
        sent = await self._send(waiting(packet, title))
        return {
            "kind": action.kind,
            "to": packet.decider,
            "class": "HUMAN_ONLY",
            "packet": packet.id,
            "room": sent.room,
            "seq": sent.seq,
        }

    async def _open(self, packet: chonk.Packet) -> None:
        """Opened once by its id, recorded first: a run asked again opens it as it was,
        and one its decider has decided stays decided."""
        await self._store.change_packet(
            packet.tenant, packet.decider, packet.id, lambda found: found or packet,
            record=lambda _, __: self._trail.change(
                packet.tenant, actor=bot(packet.tenant, packet.chonk),
                action="chonk.packet.open", target=packet.id,
                data={"decider": packet.decider, "subject": packet.subject},
            ),
        )  # fmt: skip
        await self._nudge(packet.tenant, packet.decider)

    async def _hand_off(self, request: chonk.HandoffRequest) -> dict[str, Any]:
        """§8: a handoff is data on the bus, on the run's correlation id, recorded first;
        the receiving Chonk decides whether to take it."""
        async with self._trail.change(
            request.tenant_id, actor=bot(request.tenant_id, request.from_chonk),
            action="chonk.handoff.request", target=request.id,
            data={"to": request.to_chonk, "reason": request.reason},
        ):  # fmt: skip
            await self._publish(
                request.tenant_id, chonk.HANDOFF_REQUESTED.name, request, request.id
            )
        return {"kind": "HANDOFF", "to": request.to_chonk, "handoff": request.id}

    async def _reply(
        self, p: Principal, charter: RoleCharter, text: str, key: str, **data: str
    ) -> dict[str, Any]:
        """The Chonk's reply in the thread it shares with the person (AUTONOMOUS), recorded
        first and stored once by `key`."""
        async with self._trail.change(
            p.org, actor=bot(p.org, charter.chonk_id), action="chonk.reply", target=key,
            data={"to": p.sub, **data},
        ):  # fmt: skip
            sent = await self._send(told(p.org, charter.chonk_id, charter.title, p.sub, text, key))
        return {
            "kind": "SEND_MESSAGE",
            "to": p.sub,
            "class": "AUTONOMOUS",
            "room": sent.room,
            "seq": sent.seq,
        }

    async def _nudge(self, org: str, person: str) -> None:
        """What waits on `person` changed: their pending list is read again."""
        await self._nc.publish(pending.changed(CONTRACT.name, org, key_token(person)), b"")

    async def _publish(self, org: str, subject: str, event: msgspec.Struct, msg_id: str) -> None:
        """Published once by `msg_id`, which is its org's own: two tenants may name their
        runs alike, and EVENTS drops a second message of one id as a duplicate."""
        headers = {"Nats-Msg-Id": f"{org}.{msg_id}", **logs.carried()}
        await self._js.publish(subject, codec.encode(event), headers=headers)

    async def _send(self, message: rooms.Tell) -> rooms.Message:
        return await call(self._nc, rooms.TELL, message, caller=CONTRACT.name)


def _asker(held: Proposal) -> tuple[str, str]:
    """The Chonk that asked for `held`, and its bot's title (the decider's room with it is
    the one it asked in; a title names a room only as it is made)."""
    if held.tell is not None:
        return held.tell.bot.removeprefix(CHONK_BOT), held.tell.title
    if held.chase is not None:
        return held.chase.chonk, held.chase.title
    assert held.ready is not None, "a proposal holds one thing"
    return held.ready.chonk, held.ready.chonk


def bot(org: str, chonk_id: str) -> Principal:
    """The Chonk acting on its own: a bot of the tenant."""
    return Principal(org=org, sub="service:chonk", act=f"bot:{org}:{CHONK_BOT}{chonk_id}")


def told(
    org: str,
    chonk_id: str,
    title: str,
    person: str,
    text: str,
    key: str,
    options: tuple[str, ...] = (),
) -> rooms.Tell:
    """What the Chonk, a bot of the tenant, tells `person`, stored once by `key`: sent now,
    or held for a decider's yes."""
    return rooms.Tell(
        org=org,
        person=person,
        bot=f"{CHONK_BOT}{chonk_id}",
        title=title,
        text=text,
        key=key,
        options=options,
    )


def waiting(packet: chonk.Packet, title: str) -> rooms.Tell:
    """What the Chonk tells a packet's decider: that it waits, never what it says."""
    notice = (
        f"{title} has prepared a packet for you to decide: {packet.about}. It is in your "
        "packets; nothing happens until you decide."
    )
    return told(packet.tenant, packet.chonk, title, packet.decider, notice, f"packet-{packet.id}")


def _noted(asked: Asked, state: ChaseState) -> ChaseState:
    """The chase with `asked` among its questions, once however often its stage is said."""
    if asked in state.asked:
        return state
    return msgspec.structs.replace(state, asked=(*state.asked, asked))
