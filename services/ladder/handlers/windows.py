"""One reply carried out (a draft, a confirmation, a send now or after a window), the
window's end, and the person's acts during a window (hip-0524 §5, §6, §9)."""

from datetime import timedelta

import msgspec

from libs.contracts import ladder, rooms, scheduler
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime.calls import call
from libs.runtime.kv import Conflict
from services.ladder.domain import windows
from services.ladder.handlers.common import (
    ATTEMPTS,
    ME,
    WINDOW_END,
    Ladder,
    WindowEnd,
    closed_as,
    reply_key,
)
from services.ladder.store import Confirmation, Held

__all__ = ["Windows"]


class Windows(Ladder):
    async def route(self, req: ladder.Reply, p: Principal) -> ladder.Routed:
        decided = await self.decide(req, p)
        text = req.candidates[0]
        key = reply_key(req.person, req.room, req.reply_to)
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

    async def window_ended(self, fired: scheduler.Fired) -> None:
        """Read the level again: still send, it goes (once, whatever retries); lowered, it
        is canceled. The compare-and-set on the window is what a lowering races against.
        A delivery that fails transiently leaves the window `sending` and raises, so the
        fire is tried again; when every try has failed, `window_failed` says so."""
        end = msgspec.convert(fired.payload, WindowEnd)
        for _ in range(ATTEMPTS):
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
                await self._store.replace(closed_as(found[0], "sent", sent.seq), found[1])
            except Conflict:
                pass  # recorded by a retry of this same fire

    async def window_failed(self, fired: scheduler.Fired, error: str) -> None:
        """Every try to deliver the window's send failed: it is `failed`, recorded, and the
        person sees it so among their closed windows; nothing was sent."""
        end = msgspec.convert(fired.payload, WindowEnd)
        for _ in range(ATTEMPTS):
            found = await self._store.held(end.person, end.id)
            if found is None or found[0].window.state not in ("open", "sending"):
                return
            held, revision = found
            if await self._close(
                held, revision, "failed", "ladder.window.failed", data={"error": error}
            ):
                return

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
        for _ in range(ATTEMPTS):
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
            return closed_as(held, state, sent_seq).window
        raise Refused("window-contended", 503, f"{window_id} is changing elsewhere; retry")
