"""Live calls on a person's voice line: the ladder, asked while the call rings, says whether
the agent takes it (`send` only); then it speaks its reply, recorded as its message on the
person's behalf, or the call rings the person's forwarding number or takes a voicemail."""

import asyncio
import logging
from urllib.parse import parse_qsl

from libs.contracts import agents, ladder, rooms
from libs.contracts.base import key_token
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused, Unavailable
from libs.runtime.calls import call
from services.rooms.domain import calls, lines, members, messages
from services.rooms.handlers.lines import Lines
from services.rooms.store import StoredLine

__all__ = ["Calls"]

ME = "rooms"
_log = logging.getLogger(__name__)


class Calls(Lines):
    async def call(self, req: rooms.Inbound, _: None) -> rooms.Answered:
        arrived, caller, line, room = await self._on_the_line(req)
        stored = await self._store_message(
            room,
            calls.arrived(room, caller, self._clock()),
            msg_id=f"voice-{arrived.carrier_id}",
        )
        said = await self._said(line, room, stored)
        if said is None:
            twiml = (
                calls.forwarded(line.forward_to)
                if line.forward_to
                else calls.voicemail(calls.voicemail_url(req.url))
            )
            return rooms.Answered(room=room.id, seq=stored.seq, twiml=twiml)
        agent = members.personal_agent_id(line.person)
        as_agent = Principal(org=room.org, sub=line.person, act=agent)
        reply = messages.authored(
            room, as_agent, said, self._clock(), to=f"voice:{caller}", reply_to=stored.seq,
            automatic=True,  # said with no one asked
        )  # fmt: skip
        # Said with no one asked: recorded first, once however often the carrier rings it.
        async with self._trail.change(
            room.org,
            actor=as_agent,
            action="rooms.call.speak",
            target=room.id,
            data={"call": stored.seq},
            key=f"rooms.call.speak.{room.id}.{key_token(arrived.carrier_id)}",
        ):
            spoken = await self._store_message(room, reply, msg_id=f"spoken-{arrived.carrier_id}")
        return rooms.Answered(
            room=room.id, seq=stored.seq, twiml=calls.spoken(said), spoken_seq=spoken.seq
        )

    async def _said(self, line: StoredLine, room: rooms.Room, stored: rooms.Message) -> str | None:
        """What the agent says now, if the ladder lets it take the call and its reply comes
        while the carrier still waits; None otherwise, and the call rings on or takes a
        voicemail: a caller never hears the carrier's error for a model slow or away, and
        nothing is recorded as said that the caller never heard."""
        loop = asyncio.get_running_loop()
        until = loop.time() + self._speak_within
        # Read from the room as stored, so the carrier's retry of a first call is one too.
        first = await self._first_contact(room, stored)
        decide = ladder.DecideRequest(
            org=room.org,
            person=line.person,
            room=room.id,
            transport="voice",
            first_contact=first,
            synchronous=True,
        )
        speak = agents.Speak(org=room.org, person=line.person, room=room.id, upto=stored.seq)
        try:
            decided: ladder.Decided = await call(
                self._nc, ladder.DECIDE, decide, caller=ME, timeout=self._speak_within
            )
            if decided.action != "send":
                return None
            left = max(until - loop.time(), 0.001)
            said: agents.Spoken = await call(self._nc, agents.SPEAK, speak, caller=ME, timeout=left)
        except (Refused, Unavailable) as exc:
            why = exc.problem.detail
            _log.warning("the agent did not take the call", extra={"room": room.id, "why": why})
            return None
        return said.text

    async def voicemail(self, req: rooms.Inbound, _: None) -> rooms.Answered:
        arrived, caller, _, room = await self._on_the_line(req)
        left = calls.left_voicemail(
            room, caller, arrived.text, _field(req, "RecordingDuration"), self._clock()
        )
        stored = await self._store_message(room, left, msg_id=f"voicemail-{arrived.carrier_id}")
        return rooms.Answered(room=room.id, seq=stored.seq, twiml=calls.taken())

    async def _on_the_line(
        self, req: rooms.Inbound
    ) -> tuple[lines.Arrival, str, StoredLine, rooms.Room]:
        """A voice webhook verified with its line's own secret: what arrived, who called,
        the line, and the person's room for the caller."""
        if req.transport != "voice":
            raise Refused("invalid-webhook", 422, "only a voice line takes calls")
        arrived = lines.arrival(req)
        to, caller = self._addresses(req, arrived)
        line = await self._verified(req, to, lines.verify)
        return arrived, caller, line, await self._line_room(line, caller)


def _field(req: rooms.Inbound, name: str) -> str:
    return dict(parse_qsl(req.body)).get(name, "")
