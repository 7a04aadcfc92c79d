"""Personal lines: claimed, proven with a code, connected, disconnected; carriers'
webhooks into the person's rooms, one per correspondent, announced in the line's hub."""

import secrets
from collections.abc import Callable
from datetime import datetime

import msgspec

from libs.contracts import rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.runtime import pages
from libs.runtime.kv import Conflict
from services.rooms.domain import claims, deliveries, lines, messages
from services.rooms.domain.lines import Arrival
from services.rooms.handlers.common import Rooms, person_of
from services.rooms.sealing import Sealer
from services.rooms.store import StoredLine
from services.rooms.transports import Outbound

__all__ = ["Lines"]


class Lines(Rooms):
    async def connect(self, req: rooms.ConnectLine, p: Principal) -> rooms.Line:
        """A claim on the address: a code goes to it through the line's transport, and the
        line connects only once its person sends the code back (`verify_line`). Whether the
        address is anyone else's is not said here: that would tell anyone who asks."""
        org, person = person_of(p, "connect a line")
        address = lines.normalize(req.transport, req.address)
        code, salt = f"{secrets.randbelow(10**6):06d}", secrets.token_hex(8)
        sealed = self._sealer.seal(req.credential, owner=person, transport=req.transport)
        now, target = self._clock(), f"{person}:{req.transport}"
        await self._store.change_claim(
            person,
            req.transport,
            lambda before: claims.claim(
                org,
                person,
                req.transport,
                address,
                sealed,
                code=code,
                salt=salt,
                now=now,
                forward_to=req.forward_to,
                before=before,
            ),
            record=lambda *_: self._trail.change(
                org, actor=p, action="rooms.line.claim", target=target
            ),
        )
        await self._transport.send(
            Outbound(
                transport=req.transport,
                org=org,
                room="",
                seq=0,
                sender="tether",
                to=address,
                text=claims.code_text(code),
                author_kind="bot",
                on_behalf_of=None,
                key=f"code-{req.transport}-{salt}",
            )
        )
        return rooms.Line(transport=req.transport, address=address, state="pending")

    async def verify_line(self, req: rooms.VerifyLine, p: Principal) -> rooms.Line:
        org, person = person_of(p, "connect a line")
        now = self._clock()

        def attempt(claim: claims.Claim | None) -> claims.Claim | None:
            return None if claim is None else claims.attempt(claim, req.code, now)[1]

        before, after = await self._store.change_claim(person, req.transport, attempt)
        if before is None or after is None:
            raise Refused("line-not-claimed", 404, f"you have no {req.transport} line waiting")
        claim = before
        outcome, _ = claims.attempt(before, req.code, now)  # what the write above decided
        match outcome:
            case "expired":
                await self._store.drop_claim(person, req.transport)
                raise Refused(
                    "code-expired", 410, "that claim is void (expired); connect the line again"
                )
            case "spent":  # kept to its end, so claiming again gives no new tries before then
                until = f"{claim.expires_at:%H:%M:%S} UTC"
                raise Refused(
                    "code-spent", 410, f"that claim is void (spent); connect the line after {until}"
                )
            case "wrong":
                raise Refused(
                    "code-wrong", 422, f"that is not the code; {after.tries_left} tries left"
                )
        line = StoredLine(
            org=org,
            person=person,
            transport=req.transport,
            address=claim.address,
            sealed=claim.sealed,
            connected_at=now.isoformat(),
            forward_to=claim.forward_to,
        )
        async with self._trail.change(
            org, actor=p, action="rooms.line.connect", target=f"{person}:{req.transport}"
        ):
            try:
                await self._store.connect(line)
            except Conflict as exc:
                raise Refused(
                    "address-taken", 409, f"{claim.address} is another person's line"
                ) from exc
        await self._store.drop_claim(person, req.transport)
        return _line(line, self._sealer)

    async def lines(self, _: rooms.ListLines, p: Principal) -> rooms.LineList:
        _, person = person_of(p, "read lines")
        connected = [_line(line, self._sealer) for line in await self._store.lines(person)]
        now = self._clock()
        waiting = [
            rooms.Line(transport=c.transport, address=c.address, state="pending")
            for c in await self._store.claims(person)
            if claims.live(c, now)
        ]
        return rooms.LineList(lines=[*connected, *waiting])

    async def disconnect(self, req: rooms.DisconnectLine, p: Principal) -> rooms.Line:
        org, person = person_of(p, "disconnect a line")
        line = await self._store.line(person, req.transport)
        if line is None:
            raise Refused("line-not-found", 404, f"you have no {req.transport} line")
        async with self._trail.change(
            org, actor=p, action="rooms.line.disconnect", target=f"{person}:{req.transport}"
        ):
            await self._store.disconnect(line)
        return _line(line, self._sealer)

    async def inbound(self, req: rooms.Inbound, _: None) -> rooms.Delivered:
        """A carrier's webhook: found by the address it was sent to, verified with that
        line's own secret, stored in the person's room for the correspondent. Meta's holds
        any number of messages and statuses, for any of its app's numbers."""
        if req.transport == "whatsapp":
            return await self._meta(req)
        arrived = lines.arrival(req)
        to, sender = self._addresses(req, arrived)
        line = await self._verified(req, to, lines.verify)
        return await self._arrived(req, line, sender, arrived)

    async def status(self, req: rooms.Inbound, _: None) -> rooms.StatusReport:
        """A carrier's status callback for a message that left by a line: verified with the
        line's own secret, and only for a message of that line's person. Of Meta's batch,
        the last is answered, each is applied."""
        reported = [(self._reporting(req, r), r) for r in deliveries.reports(req)]
        if not reported:
            raise Refused("invalid-webhook", 422, "the callback reports no status")
        verified = await self._lines(req, {address for address, _ in reported})
        moved = [await self._moved(verified[a], r, req.transport) for a, r in reported]
        if (last := moved[-1]) is None:
            raise Refused(
                "message-not-found",
                404,
                f"no message left by this line as {reported[-1][1].carrier_id}",
            )
        return last

    async def challenge(self, req: rooms.Inbound, _: None) -> rooms.Challenged:
        """Meta's handshake for a WhatsApp line's callback URL: its challenge said back,
        where the verify token is the line's (as `GET /v1/lines` shows it to its person);
        refused as a bad signature is otherwise, whether or not the number is a line."""
        if req.transport != "whatsapp":
            raise Refused("invalid-webhook", 422, "only a WhatsApp line takes Meta's handshake")
        address, _, challenge = lines.handshake(req.url)
        await self._verified(req, address, lines.verify_handshake)
        return rooms.Challenged(challenge=challenge)

    async def _meta(self, req: rooms.Inbound) -> rooms.Delivered:
        """Meta's webhook: every line it names verifies the whole body before anything of
        it is stored (an app signs for its own numbers only); then each message is stored
        and each status applied. A status for a message no line of ours sent, and a body
        of what is read here not at all, are passed over: refused, Meta would ask again
        for days."""
        arrived = [(*self._addresses(req, a), a) for a in lines.arrivals(req)]
        reported = [(self._reporting(req, r), r) for r in deliveries.reports(req)]
        if not arrived and not reported:
            # Another field the app subscribes to (a template's status, the account's
            # quality), or a status Meta added later: nothing here is read, nothing stored.
            return rooms.Delivered(messages=0, statuses=0)
        verified = await self._lines(
            req, {to for to, _, _ in arrived} | {address for address, _ in reported}
        )
        delivered = [await self._arrived(req, verified[to], sender, a) for to, sender, a in arrived]
        moved = [await self._moved(verified[a], r, req.transport) for a, r in reported]
        counts = {"messages": len(delivered), "statuses": sum(m is not None for m in moved)}
        if not delivered:
            return rooms.Delivered(**counts)
        first = delivered[0]
        return msgspec.structs.replace(first, **counts)

    async def _lines(self, req: rooms.Inbound, addresses: set[str]) -> dict[str, StoredLine]:
        """Each line at `addresses`, the webhook verified with each one's own secret."""
        return {a: await self._verified(req, a, deliveries.verify_report) for a in addresses}

    async def _arrived(
        self, req: rooms.Inbound, line: StoredLine, sender: str, arrived: Arrival
    ) -> rooms.Delivered:
        """`arrived` from `sender`, stored in the line's room for them once, however late
        the carrier sends it again."""
        arrival_id = lines.arrival_id(req.transport, line.address, arrived.carrier_id)
        if (earlier := await self._store.arrived_as(arrival_id)) is not None:
            room_id, seq, first = earlier
            return rooms.Delivered(room=room_id, seq=seq, first_contact=first)
        room = await self._line_room(line, sender)
        if arrived.opt is not None:  # before it is stored: no agent answers a STOP
            await self._store.opt(room.id, out=arrived.opt == "out")
        elif (
            req.transport == "email"
            and not arrived.automatic  # their server's auto-reply is not them writing again
            and await self._store.opted_out(room.id)
        ):
            await self._store.opt(room.id, out=False)  # they write again: they may be answered
        first = not arrived.automatic and await self._first_said(room) is None
        message = messages.inbound(
            room,
            f"{req.transport}:{sender}",
            arrived.text,
            req.transport,
            self._clock(),
            line.person,
            automatic=arrived.automatic,
        )
        if req.transport == "whatsapp":  # before any answer to it can be asked to leave
            await self._store.hear(room.id, message.at)
        if arrived.thread is not None and not arrived.automatic:  # an auto-reply is no thread
            await self._store.keep_thread(room.id, arrived.thread)
        stored = await self._store_message(room, message, msg_id=arrival_id, first_contact=first)
        await self._store.put_arrived(arrival_id, room.id, stored.seq, first)
        return rooms.Delivered(room=room.id, seq=stored.seq, first_contact=first)

    def _reporting(self, req: rooms.Inbound, report: deliveries.Report) -> str:
        """The line a status callback reports for, as its transport writes addresses."""
        try:
            return lines.normalize(req.transport, report.line)
        except Refused as exc:
            raise Refused("invalid-webhook", 422, exc.problem.detail) from exc

    async def _moved(
        self, line: StoredLine, report: deliveries.Report, transport: str
    ) -> rooms.StatusReport | None:
        """The delivery of the message `report` names moved forward, if the line's person
        sent it; None if no message of theirs left as that."""
        where = await self._store.delivered_as(transport, report.carrier_id)
        room = None if where is None else await self._store.room(where[0])
        if where is None or room is None or room.owner != line.person:
            return None
        if report.opts_out:
            await self._store.opt(room.id, out=True)
        now = self._clock()
        changed = await self._store.change_delivery(
            room.id, where[1], lambda d: deliveries.moved(d, report, now)
        )
        assert changed is not None
        before, after = changed
        if after.status == "failed" and before.status != "failed":
            message = await self._message(room, where[1])
            failed = rooms.FailedDelivery(
                room=room.id, seq=where[1], text=message.text, delivery=after
            )
            await self._store.put_failed(room.org, line.person, failed)
        return rooms.StatusReport(room=room.id, seq=where[1], status=after.status)

    async def failed(self, _: rooms.ListFailed, p: Principal) -> rooms.FailedList:
        _, person = person_of(p, "read what failed to arrive")
        found = await self._store.failed(person)
        page, more = pages.first(sorted(found, key=lambda f: f.delivery.at))
        return rooms.FailedList(failed=page, more=more)

    async def dismiss(self, req: rooms.DismissFailed, p: Principal) -> rooms.FailedDelivery:
        """A message the person can read that waits on them for nothing is a conflict; one
        they cannot find, in a room they cannot find, is not found."""
        org, person = person_of(p, "dismiss what failed to arrive")
        await self._message(await self._room(req.id, p), req.seq, reader=p.sub)
        found = next(
            (f for f in await self._store.failed(person) if (f.room, f.seq) == (req.id, req.seq)),
            None,
        )
        if found is None:
            raise Refused(
                "not-failed",
                409,
                f"message {req.seq} in {req.id} has no failed delivery to dismiss",
            )
        async with self._trail.change(
            org, actor=p, action="rooms.delivery.dismiss", target=f"{req.id}:{req.seq}"
        ):
            await self._store.dismiss_failed(org, person, req.id, req.seq)
        return found

    def _addresses(self, req: rooms.Inbound, arrived: Arrival) -> tuple[str, str]:
        """(our line's address, the other party's), as the line's transport writes them."""
        try:
            return (
                lines.normalize(req.transport, arrived.to),
                lines.correspondent(req.transport, arrived.sender),
            )
        except Refused as exc:
            raise Refused("invalid-webhook", 422, exc.problem.detail) from exc

    async def _verified(
        self,
        req: rooms.Inbound,
        address: str,
        check: Callable[[rooms.Inbound, str, datetime], str | None],
    ) -> StoredLine:
        """The connected line at `address`, if the webhook is signed with its own secret. An
        address that is no connected line's is checked against a throwaway secret and
        refused in the same words as a bad signature, so the answer says nothing of who has
        a line. A token the signature signs without the content is taken once: a token
        seen before with another body is a signature carried onto other content."""
        person = await self._store.owner_of(req.transport, address)
        line = None if person is None else await self._store.line(person, req.transport)
        secret = (
            secrets.token_hex(16)
            if line is None
            else self._sealer.open(line.sealed, owner=line.person, transport=line.transport)
        )
        token = None
        try:
            token = check(req, secret, self._clock())
        except Refused:
            line = None
        if line is None:
            raise Refused(
                "webhook-unverified",
                403,
                f"the webhook is not signed by the secret of a connected {req.transport} "
                f"line at {address}",
            )
        if token is not None and not await self._store.take_token(req.transport, token, req.body):
            raise Refused(
                "signature-replayed",
                403,
                f"the {req.transport} webhook's signature token was used before with other "
                "content: a carrier signs each webhook anew",
            )
        return line

    async def _line_room(self, line: StoredLine, correspondent: str) -> rooms.Room:
        """The room for this correspondent, made on first contact, and announced in the
        line's hub room when made."""
        found = await self._store.room(
            lines.room_id(line.transport, line.org, line.person, correspondent)
        )
        if found is not None:
            return found
        now = self._clock()
        room = lines.correspondent_room(line.transport, line.org, line.person, correspondent, now)
        if await self._store.create_room(room):
            hub = lines.hub(line.transport, line.org, line.person, line.address, now)
            await self._store.create_room(hub)
            notice = lines.hub_notice(hub, room, now)
            await self._store.append(hub.org, notice, msg_id=f"hub-{room.id}")
        return room


def _line(line: StoredLine, sealer: Sealer) -> rooms.Line:
    """A connected line as its person sees it: never its credential; a WhatsApp line's
    verify token, made from it, for Meta's handshake."""
    token = None
    if line.transport == "whatsapp":
        secret = sealer.open(line.sealed, owner=line.person, transport=line.transport)
        token = lines.verify_token(secret, line.address)
    return rooms.Line(
        transport=line.transport,
        address=line.address,
        state="connected",
        connected_at=datetime.fromisoformat(line.connected_at),
        verify_token=token,
    )
