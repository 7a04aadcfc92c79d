"""One handler per `tether.rooms.*` subject. Every read of a room starts from the caller's
membership; a non-member, whatever their role, finds nothing (404)."""

from collections.abc import Mapping

from libs.contracts import rooms
from libs.contracts.registry import Subject
from libs.runtime.service import Handler
from services.rooms.handlers.calls import Calls
from services.rooms.handlers.drafts import Drafts
from services.rooms.handlers.messages import Messages
from services.rooms.handlers.removals import Removals

__all__ = ["Handlers"]


class Handlers(Messages, Drafts, Calls, Removals):
    def table(self) -> Mapping[Subject, Handler]:
        return {
            rooms.CREATE: self.create,
            rooms.LIST: self.list_mine,
            rooms.GET: self.get,
            rooms.MESSAGES: self.messages,
            rooms.SEND: self.send,
            rooms.ASK: self.ask,
            rooms.ANSWER: self.answer,
            rooms.DRAFTS: self.drafts,
            rooms.MY_DRAFTS: self.my_drafts,
            rooms.SEND_DRAFT: self.send_draft,
            rooms.DISCARD_DRAFT: self.discard_draft,
            rooms.CONNECT: self.connect,
            rooms.VERIFY_LINE: self.verify_line,
            rooms.LINES: self.lines,
            rooms.DISCONNECT: self.disconnect,
            rooms.INBOUND: self.inbound,  # type: ignore[dict-item]
            rooms.STATUS: self.status,  # type: ignore[dict-item]
            rooms.CHALLENGE: self.challenge,  # type: ignore[dict-item]
            rooms.CALL: self.call,  # type: ignore[dict-item]
            rooms.VOICEMAIL: self.voicemail,  # type: ignore[dict-item]
            rooms.FAILED: self.failed,
            rooms.DISMISS: self.dismiss,
            rooms.QUESTIONS: self.questions,
            rooms.HISTORY: self.history,
            rooms.POST_DRAFT: self.post_draft,
            rooms.DELIVER: self.deliver,
            rooms.OWN_ANSWER: self.own_answer,
            rooms.ANSWER_OF: self.answer_of,
            rooms.ASK_PERSON: self.ask_person,
            rooms.WITHDRAW: self.withdraw,
            rooms.TELL: self.tell,
            rooms.SAID: self.said,
            rooms.BOT_MESSAGE_READ: self.bot_message,
            rooms.UNDRAFTED: self.undrafted,
        }
