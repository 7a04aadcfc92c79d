"""One handler per `tether.ladder.*` subject, the window's end, and answers to confirmations.

Every write is the person's own: the key is their user id, and an agent (a token with
`act`) is refused on every route of the ladder, each attempt audited. Lowering cancels
every window it affects before it answers; a window's end reads the level again.
"""

import asyncio
import hashlib
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

import msgspec
from nats.aio.client import Client

from libs.audit.trail import Trail
from libs.contracts import ladder, rooms, scheduler
from libs.contracts.base import home_org
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import Subject
from libs.runtime.calls import call
from libs.runtime.kv import Conflict, Record
from libs.runtime.service import Handler
from services.ladder.domain import windows
from services.ladder.domain.decide import decide
from services.ladder.domain.levels import change, effective
from services.ladder.store import Confirmation, Held, LadderStore

__all__ = ["Handlers"]

Clock = Callable[[], datetime]
ME = "ladder"
WINDOW_END = "window_end"
_ATTEMPTS = 32


class WindowEnd(msgspec.Struct, frozen=True):
    """The payload of a window's timer."""

    person: str
    id: str


class Handlers:
    def __init__(self, nc: Client, store: LadderStore, trail: Trail, clock: Clock) -> None:
        self._nc, self._store, self._trail, self._clock = nc, store, trail, clock

    # the person's settings

    async def get(self, _: ladder.GetLadder, p: Principal) -> ladder.MyLadder:
        person = await self._person(p, "read the ladder")
        settings, _ = await self._store.settings(person)
        ceiling, _ = await self._store.ceiling(p.org)
        resolution = await self._resolution()
        return ladder.MyLadder(
            settings=settings,
            ceiling=ceiling,
            offered_windows=windows.offered(resolution),
            resolution_ms=resolution,
            send_means=ladder.SEND_MEANS,
        )

    async def change(self, req: ladder.ChangeLevel, p: Principal) -> ladder.LadderChanged:
        person = await self._person(p, "change the ladder")
        if req.scope == "room" and req.level is not None and req.target is not None:
            await self._member(p.org, person, req.target)
        data = {"scope": req.scope, "target": req.target, "level": req.level}
        _, after = await self._store.change_settings(
            person,
            lambda before: change(before, req),
            record=self._recording(p, "ladder.level.change", person, data),
        )
        # Every open window is judged again under the new settings, before answering.
        canceled = await self._cancel_below_send(person)
        return ladder.LadderChanged(settings=after, canceled_windows=canceled)

    async def window(self, req: ladder.ChangeWindow, p: Principal) -> ladder.LadderChanged:
        person = await self._person(p, "choose the window")
        offered = [o.window for o in windows.offered(await self._resolution())]
        if req.window not in offered:
            raise Refused(
                "window-not-offered",
                422,
                f"{req.window} is shorter than the timers' resolution; offered: "
                f"{', '.join(offered)}",
            )
        _, after = await self._store.change_settings(
            person,
            lambda before: msgspec.structs.replace(before, window=req.window),
            record=self._recording(p, "ladder.window.change", person, {"window": req.window}),
        )
        return ladder.LadderChanged(settings=after, canceled_windows=0)

    def _recording(self, p: Principal, action: str, target: str, data: dict[str, object]) -> Record:
        return lambda _before, _after: self._trail.change(
            p.org, actor=p, action=action, target=target, data=data
        )

    async def ceiling(self, req: ladder.SetCeiling, p: Principal) -> ladder.Ceiling:
        """An admin sets the ceiling or lifts it (null). Lifting raises no one; lowering
        cancels, before answering, every open window of the org no longer at send."""
        await self._refuse_agent(p, "set the ceiling")
        if "admin" not in p.roles:
            raise Refused("admin-only", 403, f"only an admin of {p.org} sets its ceiling")
        for _ in range(_ATTEMPTS):
            current, revision = await self._store.ceiling(p.org)
            if current == req.level:
                break
            async with self._trail.change(
                p.org,
                actor=p,
                action="ladder.ceiling.set",
                target=p.org,
                data={"level": req.level, "before": current},
            ):
                try:
                    await self._store.put_ceiling(p.org, req.level, revision)
                except Conflict:
                    continue
            break
        else:
            raise Refused("ladder-contended", 503, "the ceiling is changing elsewhere; retry")
        found = await self._store.open_in(p.org) if req.level not in (None, "send") else []
        canceled = await self._cancel_all_below_send(found)
        return ladder.Ceiling(org=p.org, level=req.level, canceled_windows=canceled)

    # one reply

    async def decide(self, req: ladder.DecideRequest, _: Principal) -> ladder.Decided:
        settings, _rev = await self._store.settings(req.person)
        ceiling, _rev = await self._store.ceiling(req.org)
        level = effective(settings, ceiling, req.room, req.transport)
        return decide(
            level, settings.window, first_contact=req.first_contact, synchronous=req.synchronous
        )

    async def route(self, req: ladder.Reply, p: Principal) -> ladder.Routed:
        decided = await self.decide(req, p)
        text = req.candidates[0]
        key = _digest(req.person, req.room, req.reply_to)
        match decided.action:
            case "silent":
                return ladder.Routed(decision=decided)
            case "draft":
                draft = rooms.PostDraft(
                    org=req.org,
                    room=req.room,
                    reply_to=req.reply_to,
                    agent=f"agent:{req.person}",
                    text=text,
                )
                held: rooms.Draft = await call(self._nc, rooms.POST_DRAFT, draft, caller=ME)
                return ladder.Routed(decision=decided, draft=held.id)
            case "confirm":
                asked = await self._deliver(
                    req.org,
                    req.room,
                    req.person,
                    req.reply_to,
                    "question",
                    f"confirm-{key}",
                    "Your agent would reply with this. Pick it, edit it, or decline.",
                    options=req.candidates,
                )
                confirmation = Confirmation(
                    id=f"c-{key}",
                    org=req.org,
                    room=req.room,
                    person=req.person,
                    question_seq=asked.seq,
                    reply_to=req.reply_to,
                    candidates=req.candidates,
                )
                await self._store.ask(confirmation)
                return ladder.Routed(decision=decided, confirmation=confirmation.id)
        if decided.window in (None, "instant"):
            sent = await self._deliver(
                req.org, req.room, req.person, req.reply_to, "message", f"send-{key}", text
            )
            return ladder.Routed(decision=decided, sent_seq=sent.seq)
        return await self._open_window(req, decided, key, text)

    async def _open_window(
        self, req: ladder.Reply, decided: ladder.Decided, key: str, text: str
    ) -> ladder.Routed:
        """The notice first; the window starts once it is stored and delivered."""
        window_id = f"w-{key}"
        found = await self._store.held(req.person, window_id)
        if found is not None:  # the same reply routed again: its window, timed as before
            window = found[0].window
            if window.state == "open":
                await self._schedule_end(req.person, window)
            return ladder.Routed(decision=decided, window=window_id, due_at=window.due_at)
        assert decided.window is not None
        notice = await self._deliver(
            req.org,
            req.room,
            req.person,
            req.reply_to,
            "notice",
            f"notice-{key}",
            f"In {decided.window} I will send this for you unless you edit, replace or stop "
            f"it:\n\n{text}",
        )
        due_at = self._clock() + timedelta(seconds=windows.SECONDS[decided.window])
        pending = ladder.PendingWindow(
            id=window_id,
            org=req.org,
            room=req.room,
            reply_to=req.reply_to,
            text=text,
            window=decided.window,
            due_at=due_at,
            state="open",
            notice_seq=notice.seq,
        )
        await self._store.hold(Held(person=req.person, transport=req.transport, window=pending))
        await self._schedule_end(req.person, pending)
        return ladder.Routed(decision=decided, window=window_id, due_at=due_at)

    async def _schedule_end(self, person: str, window: ladder.PendingWindow) -> None:
        """The window's end, a timer on the one engine (scheduling it again replaces it)."""
        timer = scheduler.Schedule(
            key=f"w.{window.id}",
            due_at=window.due_at,
            target=WINDOW_END,
            payload=WindowEnd(person, window.id),
        )
        await call(self._nc, scheduler.SCHEDULE, timer, caller=ME)

    # the window's end

    async def window_ended(self, fired: scheduler.Fired) -> None:
        """Read the level again: still send, it goes (once, whatever retries); lowered, it
        is canceled. The compare-and-set on the window is what a lowering races against.
        A delivery that fails transiently leaves the window `sending` and raises, so the
        fire is tried again; when every try has failed, `window_failed` says so."""
        end = msgspec.convert(fired.payload, WindowEnd)
        for _ in range(_ATTEMPTS):
            found = await self._store.held(end.person, end.id)
            if found is None:
                return
            held, revision = found
            match windows.at_end(held.window, await self._level(held)):
                case "nothing":
                    return
                case "cancel":
                    if await self._close(held, revision, "canceled", "ladder.window.cancel"):
                        return
                    continue
            if held.window.state == "sending" or await self._close(
                held, revision, "sending", "ladder.window.send"
            ):
                break
        else:
            raise RuntimeError(f"window {end.id} kept changing")
        w = held.window
        sent = await self._deliver(
            w.org, w.room, held.person, w.reply_to, "message", f"send-{end.id[2:]}", w.text
        )
        found = await self._store.held(end.person, end.id)
        if found is not None and found[0].window.state == "sending":
            try:
                await self._store.replace(_closed(found[0], "sent", sent.seq), found[1])
            except Conflict:
                pass  # recorded by a retry of this same fire

    async def window_failed(self, fired: scheduler.Fired, error: str) -> None:
        """Every try to deliver the window's send failed: it is `failed`, recorded, and the
        person sees it so among their closed windows; nothing was sent."""
        end = msgspec.convert(fired.payload, WindowEnd)
        for _ in range(_ATTEMPTS):
            found = await self._store.held(end.person, end.id)
            if found is None or found[0].window.state not in ("open", "sending"):
                return
            held, revision = found
            if await self._close(
                held, revision, "failed", "ladder.window.failed", data={"error": error}
            ):
                return

    async def _close(
        self,
        held: Held,
        revision: int,
        state: str,
        action: str,
        *,
        actor: Principal | None = None,
        data: dict[str, object] | None = None,
    ) -> bool:
        """The window moved to `state` by one compare-and-set, recorded before it; False if
        another writer moved it first (the record then says `.failed`)."""
        w = held.window
        try:
            async with self._trail.change(
                w.org,
                actor=actor,
                action=action,
                target=w.id,
                data={"person": held.person, "room": w.room, **(data or {})},
            ):
                await self._store.replace(_closed(held, state), revision)
        except Conflict:
            return False
        return True

    # the person, during a window

    async def windows(self, _: ladder.ListWindows, p: Principal) -> ladder.WindowList:
        person = await self._person(p, "read pending sends")
        now = self._clock()
        held = [h.window for h, _ in await self._store.windows(person)]
        open_ = [windows.seconds_left(w, now) for w in held if w.state == "open"]
        closed = sorted((w for w in held if w.state != "open"), key=lambda w: w.due_at)
        return ladder.WindowList(
            windows=sorted(open_, key=lambda w: w.due_at), closed=closed[::-1][:20]
        )

    async def edit(self, req: ladder.WindowEdit, p: Principal) -> ladder.PendingWindow:
        return await self._intervene(p, req.id, "edited", "ladder.window.edited", req.text)

    async def replace(self, req: ladder.WindowEdit, p: Principal) -> ladder.PendingWindow:
        return await self._intervene(p, req.id, "replaced", "ladder.window.replaced", req.text)

    async def stop(self, req: ladder.WindowRef, p: Principal) -> ladder.PendingWindow:
        return await self._intervene(p, req.id, "stopped", "ladder.window.stopped", None)

    async def _intervene(
        self, p: Principal, window_id: str, state: str, action: str, text: str | None
    ) -> ladder.PendingWindow:
        """Each of edit, replace and stop cancels the agent's send; edit and replace send
        the person's own text instead, as their own message."""
        person = await self._person(p, "change a pending send")
        for _ in range(_ATTEMPTS):
            found = await self._store.held(person, window_id)
            if found is None:
                raise Refused("window-not-found", 404, f"you have no pending send {window_id}")
            held, revision = found
            if held.window.state != "open":
                raise Refused("window-closed", 409, f"{window_id} was {held.window.state}")
            if not await self._close(held, revision, state, action, actor=p):
                continue
            await self._cancel_timer(window_id)
            sent_seq = None
            if text is not None:
                w = held.window
                own = await self._deliver(
                    w.org,
                    w.room,
                    person,
                    w.reply_to,
                    "own",
                    f"own-{window_id[2:]}",
                    text,
                    edited=state == "edited",
                )
                sent_seq = own.seq
            return _closed(held, state, sent_seq).window
        raise Refused("window-contended", 503, f"{window_id} is changing elsewhere; retry")

    # confirmations

    async def confirmations(
        self, _: ladder.ListConfirmations, p: Principal
    ) -> ladder.ConfirmationList:
        person = await self._person(p, "read confirmations")
        open_ = [
            ladder.PendingConfirmation(
                id=c.id,
                room=c.room,
                question_seq=c.question_seq,
                reply_to=c.reply_to,
                candidates=c.candidates,
            )
            for c in await self._store.confirmations(person)
            if c.state == "open"
        ]
        return ladder.ConfirmationList(confirmations=sorted(open_, key=lambda c: c.question_seq))

    async def confirm(self, req: ladder.ConfirmationAnswer, p: Principal) -> ladder.Routed:
        """Answer in the room (the answer is stored there, as if given there), then act."""
        person = await self._person(p, "answer a confirmation")
        found = await self._store.confirmation(person, req.id)
        if found is None:
            raise Refused("confirmation-not-found", 404, f"you have no confirmation {req.id}")
        c = found[0]
        answer = rooms.AnswerQuestion(id=c.room, seq=c.question_seq, choice=req.choice)
        me = Principal(org=c.org, sub=person)
        stored: rooms.Message = await call(self._nc, rooms.ANSWER, answer, caller=ME, principal=me)
        sent = await self.answered(c.room, c.question_seq, req.choice)
        level = ladder.Decided(
            level="confirm",
            action="confirm",
            window=None,
            reason=f"answered by message {stored.seq}",
        )
        return ladder.Routed(decision=level, confirmation=c.id, sent_seq=sent)

    async def answered(self, room: str, seq: int, choice: rooms.Choice) -> int | None:
        """A confirmation's answer, however it came: the chosen text leaves once."""
        asked = await self._store.asked(room, seq)
        if asked is None:
            return None  # a question that is not a ladder's confirmation
        found = await self._store.confirmation(*asked)
        if found is None:
            return None
        c, revision = found
        if c.sent_seq is not None:
            return c.sent_seq  # carried out already
        outcome = {rooms.Pick: "picked", rooms.Edit: "edited", rooms.Decline: "declined"}
        settled = msgspec.structs.replace(c, state=outcome[type(choice)])
        try:
            async with self._trail.change(
                c.org,
                actor=Principal(org=c.org, sub=c.person),
                action="ladder.confirmation.answer",
                target=c.id,
                data={"outcome": settled.state, "room": c.room},
            ):
                revision = await self._store.settle(settled, revision)
        except Conflict:
            found = await self._store.confirmation(*asked)  # settled by the other path
            assert found is not None
            settled, revision = found
        match choice:
            case rooms.Pick(option=i):
                sent = await self._deliver(
                    c.org,
                    c.room,
                    c.person,
                    c.reply_to,
                    "message",
                    f"picked-{c.id}",
                    c.candidates[i],
                )
            case rooms.Edit(text=text):
                sent = await self._deliver(
                    c.org, c.room, c.person, c.reply_to, "own", f"edited-{c.id}", text, edited=True
                )
            case _:
                return None
        try:  # the key above stored it once; this spares a later repeat the round trip
            await self._store.settle(msgspec.structs.replace(settled, sent_seq=sent.seq), revision)
        except Conflict:
            pass
        return sent.seq

    def table(self) -> Mapping[Subject, Handler]:
        return {
            ladder.GET: self.get,
            ladder.CHANGE: self.change,
            ladder.WINDOW: self.window,
            ladder.CEILING: self.ceiling,
            ladder.WINDOWS: self.windows,
            ladder.EDIT: self.edit,
            ladder.REPLACE: self.replace,
            ladder.STOP: self.stop,
            ladder.CONFIRMATIONS: self.confirmations,
            ladder.CONFIRM: self.confirm,
            ladder.DECIDE: self.decide,
            ladder.ROUTE: self.route,
        }

    # helpers

    async def _person(self, p: Principal, what: str) -> str:
        await self._refuse_agent(p, what)
        if home_org(p.sub) is None:
            raise Refused("no-home-org", 403, f"{p.sub!r} is not a person <org>/<name>")
        return p.sub

    async def _member(self, org: str, person: str, room: str) -> None:
        """A room override names a room of the person's (an unset one may name a room they
        left: it only inherits again)."""
        me = Principal(org=org, sub=person)
        try:
            await call(self._nc, rooms.GET, rooms.RoomRef(id=room), caller=ME, principal=me)
        except Refused as exc:
            if exc.problem.status == 404:
                raise Refused("room-not-found", 404, f"you are in no room {room}") from exc
            raise

    async def _refuse_agent(self, p: Principal, what: str) -> None:
        """An agent never reaches the setting that governs it: refused, and recorded."""
        if p.is_agent:
            await self._trail.append(
                p.org, actor=p, action="ladder.agent.refused", target=p.sub, data={"tried": what}
            )
            raise Refused("agent-may-not", 403, f"an agent ({p.act}) may not {what}")

    async def _resolution(self) -> float:
        measured: scheduler.Resolution = await call(
            self._nc, scheduler.RESOLUTION, scheduler.ResolutionRequest(), caller=ME
        )
        return measured.resolution_ms

    async def _level(self, held: Held) -> str:
        settings, _ = await self._store.settings(held.person)
        ceiling, _ = await self._store.ceiling(held.window.org)
        return effective(settings, ceiling, held.window.room, held.transport)

    async def _cancel_below_send(self, person: str) -> int:
        open_ = [
            (person, h.window.id)
            for h, _ in await self._store.windows(person)
            if h.window.state == "open"
        ]
        return await self._cancel_all_below_send(open_)

    async def _cancel_all_below_send(self, found: list[tuple[str, str]]) -> int:
        """Judged all at once, and all done before the caller is answered."""
        limit = asyncio.Semaphore(32)

        async def one(person: str, window_id: str) -> int:
            async with limit:
                return await self._cancel_if_below_send(person, window_id)

        return sum(await asyncio.gather(*(one(person, id_) for person, id_ in found)))

    async def _cancel_if_below_send(self, person: str, window_id: str) -> int:
        """Cancel the window if its level is no longer send; 1 if this call canceled it."""
        for _ in range(_ATTEMPTS):
            found = await self._store.held(person, window_id)
            if found is None or found[0].window.state != "open":
                return 0
            held, revision = found
            if await self._level(held) == "send":
                return 0
            if not await self._close(held, revision, "canceled", "ladder.window.cancel"):
                continue
            await self._cancel_timer(window_id)
            return 1
        raise Refused("window-contended", 503, f"{window_id} is changing; lower again")

    async def _cancel_timer(self, window_id: str) -> None:
        """The window's state already says it will not send; this only spares the fire."""
        await call(self._nc, scheduler.CANCEL, scheduler.Cancel(key=f"w.{window_id}"), caller=ME)

    async def _deliver(
        self,
        org: str,
        room: str,
        person: str,
        reply_to: int,
        kind: str,
        key: str,
        text: str,
        **fields: object,
    ) -> rooms.Message:
        deliver = msgspec.convert(
            {
                "org": org,
                "room": room,
                "person": person,
                "kind": kind,
                "text": text,
                "key": key,
                "reply_to": reply_to,
                **fields,
            },
            rooms.Deliver,
        )
        return await call(self._nc, rooms.DELIVER, deliver, caller=ME)


def _closed(held: Held, state: str, sent_seq: int | None = None) -> Held:
    return msgspec.structs.replace(held, window=windows.close(held.window, state, sent_seq))


def _digest(person: str, room: str, reply_to: int) -> str:
    """One person's reply to one message has one id, so routing it again finds what it
    made."""
    return hashlib.sha256(f"{person}\0{room}\0{reply_to}".encode()).hexdigest()[:16]
