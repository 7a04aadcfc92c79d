"""A call-out, handled by the Chief Operating Orca within the tenant's labor rules
(EC-MGR-009). A person on a shift writes that someone did not come in; the solver finds who
may cover the rest of the shift. Each candidate within the hours cap is asked at once, as a
text; one the call-out exception puts into overtime is asked only on the escalation
contact's yes (PROPOSE_CONFIRM). The reporter is told who was asked. The Chief Human Officer
gets a handoff to check in with the missing person tomorrow: no reason guessed, nothing
kept about them. The first yes takes the shift: the reporter is told, and the swap is
published for the scheduling connector. If no one has said yes when the escalation comes
due, the escalation contact is told, and told again when a yes comes after. Each step is
recorded before it happens. Nothing the Chonk says judges anyone."""

from datetime import datetime, timedelta
from typing import Annotated, Any

import msgspec

from libs.contracts import chonk, rooms, scheduler
from libs.contracts.base import key_token
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from services.chonk.carrying import Carrying, bot, told
from services.chonk.domain import cover, intents
from services.chonk.domain.types import ProposedAction, Receipt, RoleCharter, SourceRef
from services.chonk.store import CallOut, Cover, Offer, Proposal

__all__ = ["COVER", "Covering"]

COVER = "cover"
CAN, CANT = "I can cover", "Can't tonight"
WHY = "Reply WHY for sources."
OFFERED_AT_ONCE = 3  # candidates texted together; more would crowd the first yes


class Scene(msgspec.Struct, frozen=True, rename="camel"):
    """A simulation tenant's roster as of one moment: its world for a call-out."""

    now: datetime
    # The escalation is timed before anyone is texted; one due at once would be refused
    # by the scheduler as past, and the call-out with it.
    escalate_after_minutes: Annotated[int, msgspec.Meta(ge=1)]
    stations: dict[str, frozenset[str]]
    rules: cover.LaborRules
    shifts: tuple[cover.Shift, ...]
    staff: tuple[cover.Worker, ...]


class CoverDue(msgspec.Struct, frozen=True):
    """The payload of a call-out's escalation timer."""

    org: str
    shift: str


class Covering(Carrying):
    async def _call_out(
        self, p: Principal, data: dict[str, Any], charter: RoleCharter, text: str
    ) -> chonk.Heard:
        if "cover" not in data:
            raise _refused("no-roster", f"{p.org} keeps no roster for its Chonks to read")
        scene = msgspec.convert(data["cover"], Scene)
        shift = next(
            (s for s in scene.shifts if p.sub in s.assigned and s.start <= scene.now < s.end), None
        )
        if shift is None:
            raise _refused("no-shift", f"{p.sub} is on no shift at {scene.now:%H:%M}")
        names = {w.id: w.name for w in scene.staff}
        missing = intents.absent(
            text, {names[a]: a for a in shift.assigned if a != p.sub and a in names}
        )
        if missing is None:
            on_shift = ", ".join(names.get(a, a) for a in shift.assigned if a != p.sub)
            raise _refused("absent-unnamed", f"say who did not come in: {on_shift}")
        candidates, unfit = cover.solve(
            shift, scene.stations[shift.station], scene.staff, scene.rules,
            now=scene.now, call_out=True,
        )  # fmt: skip
        out = CallOut(
            org=p.org,
            chonk=charter.chonk_id,
            title=charter.title,
            shift=shift.id,
            station=shift.station,
            end=shift.end,
            reporter=p.sub,
            reporter_name=names[p.sub],
            absent_name=names[missing],
            escalate_to=data["owner"],
        )
        offered = candidates[:OFFERED_AT_ONCE]
        await self._store.change_cover(p.org, shift.id, lambda c: c or Cover(call_out=out))
        async with self._trail.change(
            p.org, actor=bot(p.org, charter.chonk_id), action="chonk.cover.start",
            target=shift.id, data={
                "absent": missing,
                "asked": [c.worker for c in offered],
                "unfit": {u.worker: u.reason for u in unfit},
            },
        ):  # fmt: skip
            if offered:  # timed first: a call-out whose texts fail is escalated all the same
                due = self._clock() + timedelta(minutes=scene.escalate_after_minutes)
                covered = CoverDue(org=p.org, shift=shift.id)
                key = f"cover.{p.org}.{shift.id}"
                await self._timed(
                    scheduler.Schedule(key=key, due_at=due, target=COVER, payload=covered)
                )
            delivered = [await self._offer(out, c, scene, shift) for c in offered]
            delivered.append(await self._confirm(out, offered, scene, shift))
            delivered.append(await self._check_in(out, missing))
        if not offered:  # no one may cover: the escalation cannot wait
            await self._escalate(out)
        return chonk.Heard(intent="call_out", shift=shift.id, delivered=delivered)

    async def _offer(
        self, out: CallOut, c: cover.Candidate, scene: Scene, shift: cover.Shift
    ) -> dict[str, Any]:
        """A text to one candidate; one in overtime waits for the escalation contact's yes.
        What it rests on is kept for its "Reply WHY" once it is sent."""
        hours = f"{c.hours_after:.1f} hours this week"
        if c.overtime:
            hours += f", overtime {_first(out.escalate_to)} approved under the call-out rule"
        text = (
            f"Hi {c.name}, the {out.station} needs cover tonight until {out.end:%H:%M}: someone "
            f"could not come in. You're certified for it, and it would put you at {hours}. "
            f"Can you come in? {WHY}"
        )
        key = f"cover-{out.shift}-{c.name.lower()}"
        question = told(out.org, out.chonk, out.title, c.worker, text, key, (CAN, CANT))
        offer = Offer(org=out.org, shift=out.shift, worker=c.worker, name=c.name)
        needs = scene.stations[shift.station]
        why = _receipt(out, key, cover.offered_because(shift, needs, scene.rules, c, now=scene.now))
        if not c.overtime:
            sent = await self._send(question)
            await self._store.put_offer(sent.room, sent.seq, offer)
            await self._store.put_why(out.org, c.worker, out.chonk, why)
            return {"kind": "SEND_MESSAGE:ic_thread", "to": c.worker, "surface": "sms",
                    "room": sent.room, "seq": sent.seq}  # fmt: skip
        cap = scene.rules.max_weekly_hours
        ask = (
            f"{c.name} is certified for the {out.station} and free tonight, but covering until "
            f"{out.end:%H:%M} would put them at {c.hours_after:.1f} hours this week, over the "
            f"{cap:g} hour cap; the call-out rule allows it. Shall I ask {c.name} too?"
        )
        held = Proposal(key=key, decider=out.escalate_to, tell=question, offer=offer, why=why)
        asking = told(out.org, out.chonk, out.title, out.escalate_to, ask, f"propose-{key}",
                      ("Go ahead", "Don't"))  # fmt: skip
        action = ProposedAction(kind="SEND_MESSAGE:ic_thread", to=c.name, text=text)
        return await self._propose(action, held, asking, to=c.worker)

    async def _confirm(
        self, out: CallOut, offered: list[cover.Candidate], scene: Scene, shift: cover.Shift
    ) -> dict[str, Any]:
        """The reporter hears who was asked; nothing about the one who is missing."""
        asked = [c.name for c in offered if not c.overtime]
        waiting = [c.name for c in offered if c.overtime]
        if not offered:
            text = (
                f"Got it, {out.reporter_name}. No one certified for the {out.station} is free "
                f"tonight within the labor rules, so I've told {_first(out.escalate_to)} now. "
                f"{WHY}"
            )
        else:
            text = f"Got it, {out.reporter_name}. "
            if asked:
                text += f"I've asked {_names(asked)} to come in and cover the {out.station} "
                text += f"until {out.end:%H:%M}. "
            if waiting:
                text += (
                    f"I've asked {_first(out.escalate_to)} about {_names(waiting)}, "
                    "who would be in overtime. "
                )
            text += f"I'll tell you as soon as someone is on the way. {WHY}"
        key = f"cover-{out.shift}-confirm"
        sent = await self._send(told(out.org, out.chonk, out.title, out.reporter, text, key))
        needs, names = scene.stations[shift.station], [c.name for c in offered]
        because = cover.asked_because(shift, needs, scene.rules, names, now=scene.now)
        await self._store.put_why(out.org, out.reporter, out.chonk, _receipt(out, key, because))
        return {"kind": "SEND_MESSAGE:ic_thread", "to": out.reporter, "surface": "sms",
                "room": sent.room, "seq": sent.seq}  # fmt: skip

    async def _check_in(self, out: CallOut, missing: str) -> dict[str, Any]:
        """A note for the Chief Human Officer (quiet HR, §8): a check-in tomorrow, asking
        how the person is; no reason guessed and nothing written about them."""
        request = chonk.HandoffRequest(
            id=f"hnd_cover_{out.shift}",
            tenant_id=out.org,
            from_chonk=out.chonk,
            to_chonk="human",
            reason="quiet_hr",
            subject_refs=(missing,),
            requested_action=(
                f"Check in with {out.absent_name} tomorrow about tonight's {out.station} "
                "shift: ask how they are and whether their schedule needs anything."
            ),
            urgency="today",
            receipt_id=f"rcp_cover_{out.shift}",
            correlation_id=f"run_cover_{out.shift}",
            created_by_run_id=f"run_cover_{out.shift}",
        )
        return await self._hand_off(request)

    async def _offer_answered(self, offer: Offer, choice: rooms.Choice) -> None:
        """The first yes takes the shift, claimed with a compare-and-set; a later yes hears
        it is covered; a no changes nothing. The yes that took it, delivered again (telling
        failed, the rooms away), carries on: each message keyed, it is said once. Before,
        it found the shift taken and returned: no one was told, no swap published, and the
        escalation, seeing it covered, told no one either."""
        if not (isinstance(choice, rooms.Pick) and choice.option == 0):
            return

        def take(c: Cover | None) -> Cover | None:
            if c is None or c.taken_by is not None:
                return c
            return msgspec.structs.replace(c, taken_by=offer.worker)

        before, after = await self._store.change_cover(offer.org, offer.shift, take)
        if after is None:
            return
        out = after.call_out
        key = f"cover-{offer.shift}-{offer.name.lower()}"
        if before is not None and before.taken_by not in (None, offer.worker):
            thanks = f"Thanks, {offer.name}: it's covered already. Nothing more tonight."
            await self._send(told(out.org, out.chonk, out.title, offer.worker, thanks,
                                  f"{key}-covered"))  # fmt: skip
            return
        actor = Principal(org=out.org, sub=offer.worker)
        swap = ProposedAction(
            kind="CONNECTOR_WRITE:scheduling.swap",
            to=out.shift,
            text=f"{offer.name} covers the {out.station} until {out.end:%H:%M} in the "
            f"place of {out.absent_name}",
            receipt_id=f"rcp_cover_{out.shift}",
        )
        ready = chonk.ActionReady(
            tenant=out.org, chonk=out.chonk, run=f"run_cover_{out.shift}",
            correlation=f"run_cover_{out.shift}", action=msgspec.to_builtins(swap),
        )  # fmt: skip
        # Recorded once however often the yes is delivered, and again after a try failed.
        async with self._trail.change(
            out.org, actor=actor, action="chonk.cover.taken", target=out.shift,
            data={"by": offer.worker},
            key=f"chonk.cover.taken.{key_token(out.org)}.{key_token(out.shift)}",
        ):  # fmt: skip
            await self._send(told(
                out.org, out.chonk, out.title, offer.worker,
                f"Thank you, {offer.name}: you're on the {out.station} tonight until "
                f"{out.end:%H:%M}. {out.reporter_name} knows you're coming.", f"{key}-taken",
            ))  # fmt: skip
            coming = f"{offer.name} is coming in to cover the {out.station} until {out.end:%H:%M}."
            await self._send(told(
                out.org, out.chonk, out.title, out.reporter, coming, f"cover-{out.shift}-coming",
            ))  # fmt: skip
            if after.escalated:
                # Escalated already ("It needs you now"): the contact hears it is covered, or
                # they would still be finding someone, or coming in themself.
                await self._send(told(
                    out.org, out.chonk, out.title, out.escalate_to, f"Update: {coming}",
                    f"cover-{out.shift}-covered-late",
                ))  # fmt: skip
            await self._publish(out.org, chonk.ACTION_READY.name, ready, f"ready-cover-{out.shift}")

    async def cover_due(self, fired: scheduler.Fired) -> None:
        """The call-out's time ran out: closed once; if no one took the shift, the
        escalation contact is told. Closing is the claim on telling: if telling fails (the
        rooms away), the cover is open again for the fire's next delivery to close and
        tell. Left closed, as it was, that delivery found it closed and told no one."""
        due = msgspec.convert(fired.payload, CoverDue)

        def close(c: Cover | None) -> Cover | None:
            if c is None:
                return None
            return msgspec.structs.replace(c, closed=True, escalated=c.taken_by is None)

        before, _ = await self._store.change_cover(due.org, due.shift, close)
        if before is None or before.closed:
            return
        try:
            if before.taken_by is not None:
                await self._trail.append(
                    due.org, actor=bot(due.org, before.call_out.chonk),
                    action="chonk.cover.covered", target=due.shift,
                    data={"by": before.taken_by},
                )  # fmt: skip
                return
            await self._escalate(before.call_out)
        except BaseException:
            await self._store.change_cover(
                due.org,
                due.shift,
                lambda c: c and msgspec.structs.replace(c, closed=False, escalated=False),
            )
            raise

    async def _escalate(self, out: CallOut) -> None:
        text = (
            f"No cover yet for the {out.station} tonight until {out.end:%H:%M}: "
            f"{out.absent_name} is not in and no one has said yes. {out.reporter_name} is "
            "there without them. It needs you now."
        )
        async with self._trail.change(
            out.org, actor=bot(out.org, out.chonk), action="chonk.cover.escalate",
            target=out.shift, data={"to": out.escalate_to},
        ):  # fmt: skip
            await self._send(told(out.org, out.chonk, out.title, out.escalate_to, text,
                                  f"cover-{out.shift}-escalate"))  # fmt: skip


def _first(person: str) -> str:
    """A person's first name from their id (`org/kwame` → Kwame)."""
    return person.rsplit("/", 1)[-1].capitalize()


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _refused(rule: str, detail: str) -> Refused:
    return Refused(rule, 422, detail)


def _receipt(out: CallOut, key: str, sources: tuple[SourceRef, ...]) -> Receipt:
    """A call-out's text's receipt: the roster, rules and hours it rests on."""
    return Receipt(
        id=f"rcp_{key}", run_id=f"cover_{out.shift}", tenant_id=out.org,
        created_at=min(s.as_of for s in sources), sources=sources,
    )  # fmt: skip
