"""One reply carried out (a draft, a confirmation, a send now or after a window), the
window's end, and the person's acts during a window (hip-0524 §5, §6, §9)."""

import hashlib
from datetime import timedelta
from typing import Any, Literal

import msgspec

from libs.contracts import ladder, rooms, scheduler
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime import pages
from libs.runtime.calls import call
from libs.runtime.service import request_digest, request_key
from services.ladder.domain import unattended, windows
from services.ladder.domain.confirmations import Confirmation
from services.ladder.domain.windows import Act
from services.ladder.handlers.common import ME, WINDOW_END, Ladder, WindowEnd, moved, reply_key
from services.ladder.store import Held

__all__ = ["Windows"]

DeliverKind = Literal["message", "notice", "question"]


class Windows(Ladder):
    async def route(self, req: ladder.Reply, p: Principal) -> ladder.Routed:
        decided = await self.decide(req, p)
        text = req.candidates[0]
        key = reply_key(req.person, req.room, req.reply_to)
        question = "Your agent would reply with this. Pick it, edit it, or decline."
        if decided.action == "send" and req.transport is not None:
            hour = await self._store.count_unattended(
                req.person, req.room, lambda h: unattended.counted(h, key, self._clock())
            )
            if not unattended.admits(hour, key):
                decided, question = unattended.asked_instead(decided), unattended.QUESTION
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
                # Answered by the person while their agent drafted, the question is moot;
                # routed again once asked, it stands, whatever they said since.
                if await self._store.confirmation(req.person, f"c-{key}") is None:
                    own = await self._own_answer(req.org, req.room, req.person, req.reply_to)
                    if own is not None:
                        return ladder.Routed(decision=decided, answered_by=own)
                asked = await self._deliver(
                    _in_room(req, "question", question, f"confirm-{key}", options=req.candidates)
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
        at_once = decided.window in (None, "instant")
        held = None if at_once else await self._store.held(req.person, f"w-{key}")
        if held is None:
            # The person may have answered while their agent drafted: a send now would be a
            # second answer after theirs, as at a window's end, and a window's notice would
            # tell them of a send their answer has already taken the place of. (Routed again
            # once sent, the rooms find the send before anything they said since; once its
            # window opened, it stands, and its end finds what they said.)
            own = await self._own_answer(req.org, req.room, req.person, req.reply_to)
            if own is not None:
                if req.transport is not None:  # counted toward the hour above, it never left
                    await self._store.count_unattended(
                        req.person, req.room, lambda h: unattended.released(h, key)
                    )
                return ladder.Routed(decision=decided, answered_by=own)
        if at_once:
            # Sent with no one asked, as a window's end is: recorded first, once however
            # often the reply is routed (its message is stored once under the same key).
            async with self._trail.change(
                req.org,
                actor=Principal(org=req.org, sub=req.person, act=f"agent:{req.person}"),
                action="ladder.reply.send",
                target=f"send-{key}",
                data={"room": req.room, "reply_to": req.reply_to},
                key=f"ladder.reply.send.{key}",
            ):
                sent = await self._deliver(
                    _in_room(req, "message", text, f"send-{key}", unattended=True)
                )
            return ladder.Routed(decision=decided, sent_seq=sent.seq)
        return await self._open_window(req, decided, key, text, held)

    async def _open_window(
        self, req: ladder.Reply, decided: ladder.Decided, key: str, text: str, held: Held | None
    ) -> ladder.Routed:
        """The notice first; the window starts once it is stored and delivered."""
        window_id = f"w-{key}"
        if held is not None:  # the same reply routed again: its window, timed as before
            window = held.window
            if window.state == "open":
                await self._schedule_end(req.person, window)
            return ladder.Routed(decision=decided, window=window_id, due_at=window.due_at)
        assert decided.window is not None
        notice = await self._deliver(
            _in_room(req, "notice", windows.notice(decided.window, text), f"notice-{key}")
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
        """The window's end, a timer on the one engine (scheduling it again replaces it).
        One whose end passed before it could be timed (the scheduler away past it, and the
        reply routed again since) ends now, late, as its timer would have fired: refused,
        the route was dropped and the window held open for good, its send never made."""
        end = WindowEnd(person, window.id)
        timer = scheduler.Schedule(
            key=f"w.{window.id}", due_at=window.due_at, target=WINDOW_END, payload=end
        )
        try:
            await call(self._nc, scheduler.SCHEDULE, timer, caller=ME)
        except Refused as exc:
            if exc.problem.rule != "due-in-past":
                raise
            now = self._clock()
            late = scheduler.Fired(
                owner=ME,
                key=timer.key,
                target=WINDOW_END,
                due_at=window.due_at,
                fired_at=now,
                late_ms=max(0.0, (now - window.due_at).total_seconds() * 1000),
                payload=msgspec.to_builtins(end),
            )
            await self.window_ended(late)

    async def window_ended(self, fired: scheduler.Fired) -> None:
        """Read the level again: still send, it goes (once, whatever retries), unless the
        person has answered themself in the room meanwhile; lowered, it is canceled. The
        compare-and-set on the window is what a lowering races against. A delivery that
        fails transiently leaves the window `sending` and raises, so the fire is tried
        again; when every try has failed, `window_failed` says so. One the rooms refuse
        would be refused again: the window is `failed` at once, never left `sending`."""
        end = msgspec.convert(fired.payload, WindowEnd)
        held = await self._store.held(end.person, end.id)
        if held is None:
            return
        level = await self._level(held)
        w = held.window
        own = (
            await self._own_answer(w.org, w.room, held.person, w.reply_to)
            if level == "send" and w.state == "open"
            else None
        )
        # Replaced by the person's own answer, it is their act, recorded as theirs.
        recorded = (
            self._recorded()
            if own is None
            else self._recorded(actor=Principal(org=w.org, sub=held.person), sent_seq=own)
        )
        _, held = await self._store.change_window(
            end.person, end.id, moved(windows.ended, level, own), record=recorded
        )
        if held is None or held.window.state != "sending":
            return
        w = held.window
        send = rooms.Deliver(
            org=w.org,
            room=w.room,
            person=held.person,
            kind="message",
            text=w.text,
            key=f"send-{end.id[2:]}",
            reply_to=w.reply_to,
            unattended=True,
        )
        try:
            sent = await self._deliver(send)
        except Refused as exc:
            if exc.problem.status >= 500:
                raise
            await self.window_failed(fired, exc.problem.detail or exc.problem.type)
            return
        await self._store.change_window(
            end.person,
            end.id,
            moved(windows.delivered, sent.seq),
            record=self._recorded(sent_seq=sent.seq),
        )

    async def _own_answer(self, org: str, room: str, person: str, reply_to: int) -> int | None:
        """The person's own answer to what a send replies to, if they wrote one in the room
        meanwhile. A room that refuses (gone) has none: the send is refused in turn, and a
        window fails, as it did."""
        asked = rooms.FindOwnAnswer(org=org, room=room, person=person, answered=reply_to)
        try:
            found: rooms.OwnAnswer = await call(self._nc, rooms.OWN_ANSWER, asked, caller=ME)
        except Refused as exc:
            if exc.problem.status >= 500:
                raise
            return None
        return found.seq

    async def window_failed(self, fired: scheduler.Fired, error: str) -> None:
        """Every try to deliver the window's send failed: it is `failed`, recorded, and the
        person sees it so among their closed windows; nothing was sent."""
        end = msgspec.convert(fired.payload, WindowEnd)
        await self._store.change_window(
            end.person, end.id, moved(windows.failed), record=self._recorded(error=error)
        )

    async def windows(self, _: ladder.ListWindows, p: Principal) -> ladder.WindowList:
        person = await self._person(p, "read pending sends")
        now = self._clock()
        held = [h.window for h in await self._store.windows(person)]
        open_ = [windows.seconds_left(w, now) for w in held if w.state == "open"]
        closed = sorted((w for w in held if w.state != "open"), key=lambda w: w.due_at)
        # Each window holds its reply whole, up to 16,000 characters, and a person's agent
        # opens one for each message said to them: a busy hour outgrows one answer.
        page, more = pages.first(sorted(open_, key=lambda w: w.due_at))
        return ladder.WindowList(windows=page, closed=pages.within(closed[::-1], 20), more=more)

    async def edit(self, req: ladder.WindowEdit, p: Principal) -> ladder.PendingWindow:
        return await self._take_over(p, req.id, "edited", req.text)

    async def replace(self, req: ladder.WindowEdit, p: Principal) -> ladder.PendingWindow:
        return await self._take_over(p, req.id, "replaced", req.text)

    async def stop(self, req: ladder.WindowRef, p: Principal) -> ladder.PendingWindow:
        return await self._take_over(p, req.id, "stopped", None)

    async def _take_over(
        self, p: Principal, window_id: str, act: Act, text: str | None
    ) -> ladder.PendingWindow:
        """Each of edit, replace and stop cancels the agent's send; edit and replace send
        the person's own text instead, as their own message. The request that took the
        window over, asked again, is answered as made, and what it left undone is done: the
        timer canceled, the own text sent. A keyed one is known by its key and digest (its
        answer lost with its replica); any other by what it asks, so an edit answered 503
        after it took the window (the rooms away) sends its text when asked again, as a 503
        says to. Before, it found the window closed, and neither text ever went."""
        person = await self._person(p, "change a pending send")
        key = request_key()
        by = f"{key} {request_digest().hex()}" if key else _asked(act, text)

        def take_over(held: Held | None) -> Held:
            if held is not None and held.taken_over_by == by:
                return held
            window = windows.taken_over(held and held.window, act, window_id)
            assert held is not None
            if text is not None:  # the agent's send stays until the person's text can go
                rooms.check_line(held.transport, text)
            return msgspec.structs.replace(held, window=window, taken_over_by=by)

        _, held = await self._store.change_window(
            person, window_id, take_over, record=self._recorded(actor=p)
        )
        assert held is not None
        await self._cancel_timer(window_id)
        w = held.window
        if text is None or w.sent_seq is not None:
            return w
        own = await self._deliver(
            rooms.Deliver(
                org=w.org,
                room=w.room,
                person=person,
                kind="own",
                text=text,
                key=f"own-{window_id[2:]}",
                reply_to=w.reply_to,
                edited=act == "edited",
            )
        )

        def sent(held: Held | None) -> Held | None:
            return held and msgspec.structs.replace(
                held, window=windows.own_sent(held.window, own.seq)
            )

        _, held = await self._store.change_window(person, window_id, sent)
        assert held is not None
        return held.window


def _asked(act: Act, text: str | None) -> str:
    """What an unkeyed take-over asks: its act and a digest of its text."""
    return f"{act} {hashlib.sha256((text or '').encode()).hexdigest()}"


def _in_room(
    req: ladder.Reply, kind: DeliverKind, text: str, key: str, **more: Any
) -> rooms.Deliver:
    """What routing `req` says in its room, answering the message it replies to."""
    return rooms.Deliver(
        org=req.org,
        room=req.room,
        person=req.person,
        kind=kind,
        text=text,
        key=key,
        reply_to=req.reply_to,
        **more,
    )
