"""Rooms and their messages: create, list, read, send; confirmation questions and their
answers; what the ladder delivers; the history the agents service reads."""

import secrets

import msgspec

from libs.contracts import agents, rooms
from libs.contracts.principal import Principal
from libs.contracts.problem import KeyReused, Refused
from libs.runtime import pages
from libs.runtime.calls import call
from libs.runtime.service import request_key
from services.rooms.domain import members, messages, questions
from services.rooms.handlers.common import Rooms, person_of

__all__ = ["Messages"]


class Messages(Rooms):
    async def create(self, req: rooms.CreateRoom, p: Principal) -> rooms.Room:
        limits: agents.PlanLimits = await call(
            self._nc, agents.LIMITS, agents.PlanLimitsRequest(org=p.org), caller="rooms"
        )
        # The runtime answers a keyed create run again; made under the key, a room is made
        # once even by a replica that died before it kept its answer.
        key = request_key()
        room_id = f"r-{key[:16]}" if key else f"r-{secrets.token_hex(8)}"
        if key and (made := await self._store.room(room_id)) is not None:
            return made
        room = members.new_room(req, p, room_id, self._clock(), max_members=limits.room_members)
        async with self._trail.change(
            room.org, actor=p, action="rooms.room.create", target=room.id
        ):
            await self._store.create_room(room)
        return room

    async def list_mine(self, req: rooms.ListRooms, p: Principal) -> rooms.RoomList:
        found, next_ = await self._store.rooms_of(
            members.caller(p).id, after=req.after, limit=req.limit
        )
        return rooms.RoomList(rooms=[r for r in found if members.readable_in(r, p)], next=next_)

    async def get(self, req: rooms.RoomRef, p: Principal) -> rooms.Room:
        return await self._room(req.id, p)

    async def messages(self, req: rooms.ListMessages, p: Principal) -> rooms.MessagePage:
        room = await self._room(req.id, p)
        found, more = await self._store.page(room.org, room.id, req.after, req.limit, reader=p.sub)
        if room.transport is not None:  # what left by the line, with how it fares
            fares = await self._store.deliveries(room.id, [m.seq for m in found])
            found = [msgspec.structs.replace(m, delivery=fares.get(m.seq)) for m in found]
        kept, cut = pages.first(found, req.limit)  # 200 messages of 16,000 characters: 3 MB
        more = more or cut
        return rooms.MessagePage(messages=kept, next=kept[-1].seq if more else None)

    async def send(self, req: rooms.Send, p: Principal) -> rooms.Message:
        room = await self._room(req.id, p)
        messages.check_sender(p)
        found = req.reply_to is None or await self._store.message(
            room.org, room.id, req.reply_to, reader=p.sub
        )
        if not found:  # the room is found; what the body names in it is not
            raise Refused(
                "invalid-reply-to", 422, f"reply_to {req.reply_to} is no message of {room.id}"
            )
        message = messages.authored(
            room, p, req.text, self._clock(), to=req.to, reply_to=req.reply_to
        )
        # Kept by the runtime for the day a key lasts, and stored under the key as well: the
        # stream knows the key for an hour, long enough for the retry of a replica that died
        # before it kept its answer.
        key = request_key()
        return await self._store_message(room, message, msg_id=key and f"send-{key}")

    # confirmation questions

    async def ask(self, req: rooms.Ask, p: Principal) -> rooms.Message:
        room = await self._room(req.id, p)
        messages.check_sender(p, asks=req.to)
        question = rooms.Question(options=req.options)
        message = messages.authored(room, p, req.text, self._clock(), to=req.to, question=question)
        key = request_key()  # as a message sent is
        asked = await self._store_message(room, message, msg_id=key and f"ask-{key}")
        await self._store.put_question(room.org, asked, self._clock())
        return asked

    async def answer(self, req: rooms.AnswerQuestion, p: Principal) -> rooms.Message:
        room = await self._room(req.id, p)
        asked = await self._message(room, req.seq, reader=p.sub)
        questions.check_answerer(asked, p)
        questions.check_open(asked, self._clock())
        text = questions.answer_text(asked, req.choice, line=room.transport)
        if not isinstance(req.choice, rooms.Decline):
            await self._line_out(room)  # what the answer picks leaves by the room's line
        message = messages.answer_alone(
            messages.authored(
                room, p, text, self._clock(), reply_to=req.seq, answers=req.seq, choice=req.choice
            ),
            asked,
        )
        # Keyed, its answer lost in a failover: answered as it was.
        return await self._as_answer(room, req.seq, message, p.sub, again=bool(request_key()))

    async def questions(self, _: rooms.ListQuestions, p: Principal) -> rooms.QuestionList:
        _, person = person_of(p, "read the questions asked of their person")
        found = await self._store.questions(person, self._clock())
        page, more = pages.first(sorted(found, key=lambda q: q.at))
        return rooms.QuestionList(questions=page, more=more)

    async def deliver(self, req: rooms.Deliver, _: Principal) -> rooms.Message:
        """From the ladder: the person's agent (or, for `own`, the person) in a room of
        theirs. Who wrote it follows from the kind, set here; `key` stores it once."""
        room = await self._persons_room(req.org, req.room, req.person)
        agent = members.personal_agent_id(req.person)
        as_agent = Principal(org=room.org, sub=req.person, act=agent)
        as_person = Principal(org=room.org, sub=req.person)
        now, to = self._clock(), None
        if req.reply_to is not None:
            asked = await self._message(room, req.reply_to)
            to = asked.author if members.is_member(room, asked.author) else None
        match req.kind:
            case "message":
                message = messages.authored(
                    room,
                    as_agent,
                    req.text,
                    now,
                    to=to,
                    reply_to=req.reply_to,
                    automatic=req.unattended,
                )
            case "own":  # the person's own words, to whoever they answer but themselves
                message = messages.authored(
                    room,
                    as_person,
                    req.text,
                    now,
                    to=None if to == req.person else to,
                    reply_to=req.reply_to,
                    drafted_by=agent if req.edited else None,
                )
            case "notice":
                message = msgspec.structs.replace(
                    messages.authored(
                        room, as_agent, req.text, now, to=req.person, reply_to=req.reply_to
                    ),
                    notice=True,
                )
            case "question":
                if not req.options:
                    raise Refused("invalid-request", 422, "a question needs an option")
                message = messages.authored(
                    room,
                    as_agent,
                    req.text,
                    now,
                    to=req.person,
                    reply_to=req.reply_to,
                    question=rooms.Question(options=req.options),
                )
        return await self._store_message(room, message, key=req.key)

    async def undrafted(self, req: rooms.Undrafted, p: Principal) -> rooms.Message:
        """From the agents service: the person's own agent could not draft its reply to a
        message in a room of theirs. It tells them so, alone, as a notice answering it."""
        notice = rooms.Deliver(
            org=req.org,
            room=req.room,
            person=req.person,
            kind="notice",
            text=req.text,
            key=f"undrafted-{req.reply_to}",
            reply_to=req.reply_to,
        )
        return await self.deliver(notice, p)

    async def ask_person(self, req: rooms.AskPerson, _: Principal) -> rooms.Message:
        """From the poa service: the person's own agent asks them alone, in their own room."""
        room = members.own_room(req.org, req.person, self._clock())
        if await self._store.room(room.id) is None:
            await self._store.create_room(room)
        agent = members.personal_agent_id(req.person)
        as_agent = Principal(org=room.org, sub=req.person, act=agent)
        question = rooms.Question(options=req.options, editable=False, closes_at=req.closes_at)
        message = messages.authored(
            room, as_agent, req.text, self._clock(), to=req.person, question=question
        )
        return await self._store_message(room, message, key=req.key)

    async def withdraw(self, req: rooms.Withdraw, _: Principal) -> rooms.Message:
        """From the poa service: a question its person's agent asked them alone takes no
        answer now. The agent tells them so, alone, as a notice in the answer's place (the
        one message a question's answer is stored as, and claimed by), so no answer of the
        person's is stored after it, nor counted; answered first, 409 and their answer
        stands. Never the person's answer: they did not give it."""
        room = await self._persons_room(req.org, req.room, req.person)
        asked = await self._message(room, req.seq, reader=req.person)
        agent = members.personal_agent_id(req.person)
        if asked.question is None or asked.author != agent or asked.to != req.person:
            why = f"message {req.seq} is no question of {agent}'s to {req.person}"
            raise Refused("not-a-question", 404, why)
        as_agent = Principal(org=room.org, sub=req.person, act=agent)
        notice = messages.alone(
            msgspec.structs.replace(
                messages.authored(
                    room, as_agent, req.text, self._clock(), to=req.person, reply_to=req.seq
                ),
                notice=True,
            )
        )
        return await self._as_answer(room, req.seq, notice, req.person, again=True)

    async def _as_answer(
        self, room: rooms.Room, seq: int, message: rooms.Message, person: str, *, again: bool
    ) -> rooms.Message:
        """`message` stored as question `seq`'s one answer, then claimed as it, and the
        question off `person`'s list; 409 once it has one. `again`: the same message, stored
        by an earlier run, is answered as it was."""
        answered = Refused("already-answered", 409, f"question {seq} has its answer")
        first = await self._store.answer_to(room.id, seq)
        if first is not None:
            if again and first:
                stored = await self._store.message(room.org, room.id, first, reader=person)
                if stored is not None and messages.same(stored, message):
                    await self._store.question_answered(room.org, person, room.id, seq)
                    return stored
            raise answered
        # Stored, then claimed with its seq: a replica that dies between the two leaves an
        # answer its retry finds, never a question claimed and unanswered for good. The
        # stream refuses a second answer for an hour, the claim after that.
        try:
            stored = await self._store_message(room, message, msg_id=f"answer-{room.id}-{seq}")
        except KeyReused:
            raise answered from None
        await self._store.claim_answer(room.id, seq, stored.seq)
        await self._store.question_answered(room.org, person, room.id, seq)
        return stored

    async def own_answer(self, req: rooms.FindOwnAnswer, _: Principal) -> rooms.OwnAnswer:
        """From the ladder, before a send: whether the person answered the message
        themself meanwhile, so their agent's send would be a second answer. Only before
        their agent's own reply to it: a send asked again after it was made finds that
        reply first, and what the person said after it answers their agent."""
        room = await self._persons_room(req.org, req.room, req.person)
        theirs = messages.own_answer(room, req.person, req.answered)
        agents = messages.replied(req.person, req.answered)
        found = await self._first_after(room, req.answered, lambda m: theirs(m) or agents(m))
        return rooms.OwnAnswer(seq=found.seq if found is not None and theirs(found) else None)

    async def answer_of(self, req: rooms.FindAnswer, _: Principal) -> rooms.FoundAnswer:
        """From the service that asked, as the question's time runs out (PoA's ask expiring,
        a Chonk's chase at its next stage): the answer the person gave, if they did. The
        room took it in time, so it counts even when its event was not read first."""
        room = await self._persons_room(req.org, req.room, req.person)
        seq = await self._store.answer_to(room.id, req.seq)
        if not seq:  # unanswered (0: claimed before claims named the answer)
            return rooms.FoundAnswer()
        answer = await self._store.message(room.org, room.id, seq, reader=req.person)
        if answer is None or answer.author != req.person or answer.answers != req.seq:
            return rooms.FoundAnswer()
        return rooms.FoundAnswer(choice=answer.choice)

    async def _persons_room(self, org: str, room_id: str, person: str) -> rooms.Room:
        """The room of `org` that the ladder names for `person`, if they are in it."""
        room = await self._store.room(room_id)
        if room is None or room.org != org or not members.is_member(room, person):
            raise Refused("room-not-found", 404, f"{person} has no room {room_id}")
        return room

    async def tell(self, req: rooms.Tell, _: Principal) -> rooms.Message:
        """From a service that runs a bot of the org (the manager agents): the bot tells the
        person, in the room the two share alone."""
        bot = f"bot:{req.org}:{req.bot}"
        room = await self._bot_room(req.org, req.person, bot, req.title)
        if len(req.options) == 1:
            raise Refused("invalid-request", 422, "a question needs two options or more")
        said = messages.authored(
            room, Principal(org=req.org, sub=req.person, act=bot), req.text, self._clock(),
            to=req.person,
            question=(
                rooms.Question(options=req.options, editable=False, closes_at=req.closes_at)
                if req.options
                else None
            ),
        )  # fmt: skip
        # The bot speaks for its org, not for the person it tells (hip-0524 §7).
        said = msgspec.structs.replace(said, on_behalf_of=None)
        told = await self._store_message(room, said, key=req.key)
        if told.question is not None:
            await self._store.put_question(req.org, told, self._clock())
        return told

    async def said(self, req: rooms.Said, _: Principal) -> rooms.Message:
        """From a service that runs a bot of the org: what the person said to its bot
        through it, stored as theirs in the room the two share alone. The service read it
        as it came, so nothing is raised for it to read again."""
        room = await self._bot_room(req.org, req.person, f"bot:{req.org}:{req.bot}", req.title)
        said = messages.authored(
            room, Principal(org=req.org, sub=req.person), req.text, self._clock()
        )
        return await self._store_message(room, said, key=req.key, read=True)

    async def _bot_room(self, org: str, person: str, bot: str, title: str) -> rooms.Room:
        """The room `person` shares with `bot` alone, made the first time, titled `title`."""
        room = members.bot_room(org, person, bot, title, self._clock())
        if await self._store.room(room.id) is None:
            await self._store.create_room(room)
        return room

    async def bot_message(self, req: rooms.BotMessageRef, _: Principal) -> rooms.Message:
        """From a service that runs a bot of the org: what a person wrote in the room they
        share with its bot, and nothing else of any room."""
        room = await self._store.room(req.room)
        found = None
        if room is not None and room.org == req.org:
            found = await self._store.message(room.org, room.id, req.seq)
        if room is None or found is None or messages.to_bot(room, found) is None:
            raise Refused(
                "message-not-found", 404, f"no message {req.seq} to a bot in room {req.room}"
            )
        return found

    # from the agents service

    async def history(self, req: rooms.History, _: Principal) -> rooms.MessagePage:
        room = await self._store.room(req.room)
        if room is None or room.org != req.org:
            raise Refused("room-not-found", 404, f"no room {req.room} in {req.org}")
        # The stream holds every room's messages in one sequence, so look back through a
        # span of it that doubles until it holds `limit` of this room's, or reaches the start.
        span = 10 * req.limit
        while True:
            after = max(0, req.upto - span)
            found, _ = await self._store.page(room.org, room.id, after, span)
            upto = [m for m in found if m.seq <= req.upto]
            if len(upto) >= req.limit or after == 0:
                newest_first = pages.within(upto[-req.limit :][::-1], req.limit)
                return rooms.MessagePage(messages=newest_first[::-1])
            span *= 2
