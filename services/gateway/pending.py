"""`GET /v1/pending` and `GET /v1/pending/stream`: everything waiting on the person.

What waits lives where it is decided: drafts, failed deliveries and the questions asked of
the person (by a person, or a manager agent's bot) in rooms, windows and confirmations in
the ladder, asks in poa, layer drafts in mod, the HUMAN_ONLY packets the person decides in
chonk. Each is asked, as the person, for theirs alone; the gateway only puts the answers
side by side, each with the actions it admits.
Any of them unavailable, the whole list is (503): a list missing a kind would say nothing
waits.

The stream subscribes to the person's nudges (`tether.live.*.pending.<org>.<person>`, and
the org's `admins` for an admin) before it reads the list, so no change is missed between;
each nudge reads the list again, and a list that changed (a window's seconds left aside,
which differ at every read) is sent as one `pending` event.
The gateway back on the bus is a nudge too: what nudged meanwhile never reached it, and so
is a while with none (`streams.AGAIN`): a nudge is sent at most once.
"""

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime

import msgspec
from aiohttp import web
from nats.aio.client import Client
from nats.aio.subscription import Subscription

from libs.contracts import chonk, codec, ladder, mod, poa, rooms
from libs.contracts.base import key_token
from libs.contracts.pending import ADMINS, Action, Pending, PendingItem
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.registry import live_subject
from services.gateway.forward import NATS, ask, caller, on_bus
from services.gateway.limits import RateLimiter
from services.gateway.routes import Route
from services.gateway.streams import END, EVENT_STREAM, STREAMS, head, next_of
from services.gateway.tokens import refused_after

__all__ = ["pending_list", "pending_stream"]

_SETTLE_S = 0.05  # nudges that come together are read as one
_RETRY_S = 1.0
_drafts = codec.decoder(rooms.DraftList).decode
_windows = codec.decoder(ladder.WindowList).decode
_confirmations = codec.decoder(ladder.ConfirmationList).decode
_asks = codec.decoder(poa.AskList).decode
_layer_drafts = codec.decoder(mod.LayerDraftList).decode
_failed = codec.decoder(rooms.FailedList).decode
_questions = codec.decoder(rooms.QuestionList).decode
_packets = codec.decoder(chonk.PacketList).decode


def pending_list(
    route: Route, *, key: str, limiter: RateLimiter, timeout: float
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(http: web.Request) -> web.Response:
        p = _person(await caller(route, http, key=key, limiter=limiter))
        found = await gathered(http.app[NATS], p, timeout=timeout)
        return web.Response(body=codec.encode(found), content_type="application/json")

    return handler


def pending_stream(
    route: Route, *, key: str, limiter: RateLimiter, timeout: float, reread: float
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(http: web.Request) -> web.StreamResponse:
        p = _person(await caller(route, http, key=key, limiter=limiter))
        if http.method == "HEAD":
            return head(http, p)
        until = refused_after(http.headers.get("Authorization"), key)
        nc = on_bus(http)
        nudges: asyncio.Queue[bytes] = asyncio.Queue(1000)

        async def on_nudge(_: object) -> None:
            _nudge(nudges)

        http.app[STREAMS].open(p, nudges)
        subs: list[Subscription] = []
        response = web.StreamResponse(headers=EVENT_STREAM)
        try:
            for token in (key_token(p.sub), *((ADMINS,) if "admin" in p.roles else ())):
                subject = live_subject("*", "pending", p.org, token)
                subs.append(await nc.subscribe(subject, cb=on_nudge))
            await response.prepare(http)
            last = b""
            while True:
                try:
                    found = await gathered(nc, p, timeout=timeout)
                except Refused as exc:
                    if exc.problem.status < 500:  # asking again would get the same answer
                        await response.write(
                            b"event: refused\ndata: %s\n\n" % codec.encode(exc.problem)
                        )
                        break
                    await response.write(b"event: unavailable\ndata: {}\n\n")
                    asyncio.get_running_loop().call_later(_RETRY_S, _nudge, nudges)  # read again
                else:
                    if (standing := _standing(found)) != last:
                        await response.write(b"event: pending\ndata: %s\n\n" % codec.encode(found))
                        last = standing
                if not await _nudged(nudges, response, until, reread):
                    break
        except ConnectionResetError:
            pass  # the client went away
        finally:
            http.app[STREAMS].close(nudges)
            for sub in subs:
                with contextlib.suppress(Exception):
                    await sub.unsubscribe()
        return response

    return handler


def _standing(found: Pending) -> bytes:
    """The list less what says only when it was read (a window's seconds left): read
    again with nothing changed but that, it is not sent again."""
    items = [
        msgspec.structs.replace(
            i, detail={k: v for k, v in i.detail.items() if k != "seconds_left"}
        )
        for i in found.items
    ]
    return codec.encode(msgspec.structs.replace(found, items=items))


def _nudge(nudges: asyncio.Queue[bytes]) -> None:
    with contextlib.suppress(asyncio.QueueFull):  # one waiting is as good as many
        nudges.put_nowait(b"nudge")


async def _nudged(
    nudges: asyncio.Queue[bytes], response: web.StreamResponse, until: float, reread: float
) -> bool:
    """Until something of the person's changes (the nudges that come with it read as one),
    or `reread` seconds; False when the gateway is stopping or the token has expired."""
    nudge = await next_of(nudges, response, until, time.monotonic() + reread)
    if nudge != END:
        await asyncio.sleep(_SETTLE_S)
    while nudge != END and not nudges.empty():
        nudge = nudges.get_nowait()
    return nudge != END


async def gathered(nc: Client, p: Principal, *, timeout: float) -> Pending:
    """Each source asked at once, as the person."""
    sources = {
        rooms.MY_DRAFTS: b"{}",
        ladder.WINDOWS: b"{}",
        ladder.CONFIRMATIONS: b"{}",
        poa.ASKS: b"{}",
        mod.DRAFTS: b"{}",
        rooms.FAILED: b"{}",
        rooms.QUESTIONS: b"{}",
        chonk.PACKETS: b'{"state": "open"}',
    }
    replies = await asyncio.gather(
        *(ask(nc, s, body, p, timeout=timeout) for s, body in sources.items())
    )
    for subject, (status, body) in zip(sources, replies, strict=True):
        if status is not None:
            raise Refused(
                "pending-unavailable",
                503 if status >= 500 else status,
                f"{subject.name} could not say what waits on you: {body.decode()[:200]}",
            )
    raw = [body for _, body in replies]
    drafts, windows, confirmations = _drafts(raw[0]), _windows(raw[1]), _confirmations(raw[2])
    asks, layer_drafts, failed = _asks(raw[3]), _layer_drafts(raw[4]), _failed(raw[5])
    questions, packets = _questions(raw[6]), _packets(raw[7])
    items = [
        *map(_draft, drafts.drafts),
        *map(_window, (w for w in windows.windows if w.state == "open")),
        *map(_confirmation, confirmations.confirmations),
        *map(_ask, asks.asks),
        *map(_layer_draft, (d for d in layer_drafts.drafts if d.state == "open")),
        *map(_delivery, failed.failed),
        *map(_question, questions.questions),
        *map(_packet, packets.packets),
    ]
    listed = (drafts, windows, confirmations, asks, failed, questions)
    more = packets.next is not None or any(found.more for found in listed)
    return Pending(items=sorted(items, key=_soonest), more=more)


def _person(p: Principal) -> Principal:
    if p.is_agent:
        raise Refused("agent-may-not", 403, "what waits on a person is theirs to see")
    return p


def _soonest(item: PendingItem) -> tuple[bool, datetime | str, str]:
    return (item.deadline is None, item.deadline or "", item.id)


def _actions(*named: tuple[str, str, str, dict | None]) -> list[Action]:
    return [Action(name=n, method=m, path=path, body=body) for n, m, path, body in named]  # type: ignore[arg-type]


def _draft(d: rooms.Draft) -> PendingItem:
    """A draft whose send failed on its way (`sending`) is sent again, never discarded."""
    path = f"/v1/rooms/{d.room}/drafts/{d.id}"
    discard = () if d.state == "sending" else (("discard", "POST", f"{path}/discard", {}),)
    return PendingItem(
        kind="draft",
        id=d.id,
        room=d.room,
        text=d.text,
        actions=_actions(
            ("send", "POST", f"{path}/send", {}),
            ("edit", "POST", f"{path}/send", {"text": d.text}),
            *discard,
        ),
        detail={"reply_to": d.reply_to, "first_contact": d.first_contact},
    )


def _window(w: ladder.PendingWindow) -> PendingItem:
    path = f"/v1/windows/{w.id}"
    return PendingItem(
        kind="window",
        id=w.id,
        room=w.room,
        text=w.text,
        deadline=w.due_at,
        actions=_actions(
            ("stop", "POST", f"{path}/stop", {}),
            ("edit", "POST", f"{path}/edit", {"text": w.text}),
            ("replace", "POST", f"{path}/replace", {"text": w.text}),
        ),
        detail={"window": w.window, "seconds_left": w.seconds_left, "reply_to": w.reply_to},
    )


def _confirmation(c: ladder.PendingConfirmation) -> PendingItem:
    path = f"/v1/confirmations/{c.id}"
    edit = c.candidates[0] if "edit" in c.actions and c.candidates else None
    choices = _choices(len(c.candidates), edit, decline="decline" in c.actions)
    return PendingItem(
        kind="confirmation",
        id=c.id,
        room=c.room,
        text=c.candidates[0] if c.candidates else "",
        candidates=list(c.candidates),
        actions=_actions(*((n, "POST", path, {"choice": body}) for n, body in choices)),
        detail={"question_seq": c.question_seq, "reply_to": c.reply_to},
    )


def _choices(options: int, edit: str | None, *, decline: bool = True) -> Iterable[tuple[str, dict]]:
    """An answer's choices, each named: every option picked, the person's own words (`edit`
    the box's first text) where taken, and decline where offered."""
    yield from ((f"pick {i}", {"type": "pick", "option": i}) for i in range(options))
    if edit is not None:
        yield "edit", {"type": "edit", "text": edit}
    if decline:
        yield "decline", {"type": "decline"}


def _question(q: rooms.Message) -> PendingItem:
    """Answered in its room: an option picked, the person's own words where it takes them,
    or declined."""
    assert q.question is not None
    path = f"/v1/rooms/{q.room}/questions/{q.seq}/answer"
    choices = _choices(len(q.question.options), "" if q.question.editable else None)
    return PendingItem(
        kind="question",
        id=f"{q.room}-{q.seq}",
        room=q.room,
        text=q.text,
        deadline=q.question.closes_at,
        candidates=list(q.question.options),
        actions=_actions(*((n, "POST", path, {"choice": body}) for n, body in choices)),
        detail={"seq": q.seq, "author": q.author, "asked_at": q.at.isoformat()},
    )


def _packet(packet: chonk.Packet) -> PendingItem:
    """A HUMAN_ONLY packet its decider decides (§2): what they decide happens outside;
    they say here when they have."""
    return PendingItem(
        kind="packet",
        id=packet.id,
        text=f"{packet.about[:1].upper()}{packet.about[1:]}\n\n{packet.text}",
        actions=_actions(("decided", "POST", f"/v1/chonk/packets/{packet.id}/decided", {})),
        detail={
            "chonk": packet.chonk,
            "subject": packet.subject,
            "opened_at": packet.opened_at.isoformat(),
        },
    )


def _ask(a: poa.AskRecord) -> PendingItem:
    money = f" {a.amount} {a.currency or ''}".rstrip() if a.amount is not None else ""
    party = f" with {a.counterparty}" if a.counterparty else ""
    path = f"/v1/poa/asks/{a.id}/answer"
    return PendingItem(
        kind="ask",
        id=a.id,
        room=a.room,
        text=f"{a.agent} asks to {a.act}{money}{party} ({a.rule_id})",
        deadline=a.expires_at,
        actions=_actions(
            ("approve", "POST", path, {"answer": "approve"}),
            ("decline", "POST", path, {"answer": "decline"}),
        ),
        detail={
            "grant": a.grant_id,
            "rule_id": a.rule_id,
            "act": a.act,
            "amount": a.amount,
            "currency": a.currency,
            "counterparty": a.counterparty,
            "purpose": a.purpose,
        },
    )


def _layer_draft(d: mod.LayerDraft) -> PendingItem:
    path = f"/v1/mod/drafts/{d.id}"
    return PendingItem(
        kind="layer_draft",
        id=d.id,
        text=d.note or f"{len(d.ops)} changes to your {d.layer} layer",
        deadline=d.commits_at or d.expires_at,
        actions=_actions(("keep", "POST", f"{path}/commit", {}), ("discard", "DELETE", path, None)),
        detail={
            "layer": d.layer,
            "base": d.base,
            "writer": d.writer,
            "ops": len(d.ops),
            "at_deadline": "commits" if d.commits_at else "expires",
        },
    )


def _delivery(f: rooms.FailedDelivery) -> PendingItem:
    return PendingItem(
        kind="delivery",
        id=f"{f.room}:{f.seq}",
        room=f.room,
        text=f.text,
        actions=_actions(
            ("dismiss", "POST", f"/v1/rooms/{f.room}/messages/{f.seq}/dismiss", {}),
        ),
        detail={
            "seq": f.seq,
            "transport": f.delivery.transport,
            "carrier_id": f.delivery.carrier_id,
            "error": f.delivery.error,
            "at": f.delivery.at.isoformat(),
        },
    )
