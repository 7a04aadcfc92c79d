"""Confirmation questions: two or more options, answered in the room by the person asked,
once. Declining is one act, exactly as easy as picking (hip-0524 §4, §6)."""

from datetime import datetime

from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from libs.contracts.rooms import Choice, Decline, Edit, Message, Pick, check_line

__all__ = ["answer_text", "check_answerer", "check_open"]


def check_answerer(question: Message, p: Principal) -> None:
    if question.question is None:
        raise Refused("not-a-question", 422, f"message {question.seq} asks nothing")
    if p.is_agent:
        raise Refused("agent-may-not", 403, "an agent may not answer its person's question")
    if p.sub != question.to:
        raise Refused("not-asked", 403, f"message {question.seq} asks {question.to}, not you")


def check_open(question: Message, now: datetime) -> None:
    """A question its asker closed takes no answer: it would change nothing."""
    assert question.question is not None
    closes_at = question.question.closes_at
    if closes_at is not None and now >= closes_at:
        raise Refused(
            "question-closed",
            409,
            f"question {question.seq} closed at {closes_at:%Y-%m-%d %H:%M:%S} UTC: "
            "no answer changes anything now",
        )


def answer_text(question: Message, choice: Choice, *, line: str | None = None) -> str:
    """What the answer says. In a line's room (`line`, its transport) a question is the
    ladder's confirmation, and what it picks or edits is what leaves by the line: refused
    here, before the answer is stored, where the line cannot carry it."""
    assert question.question is not None
    match choice:
        case Pick(option=i):
            options = question.question.options
            if i >= len(options):
                raise Refused(
                    "invalid-option", 422, f"option {i} does not exist; there are {len(options)}"
                )
            check_line(line, options[i])  # asked before its line was bounded: edit it
            return options[i]
        case Edit(text=text):
            if not question.question.editable:
                raise Refused(
                    "edit-not-offered",
                    422,
                    f"question {question.seq} takes one of its options or a decline, no edit",
                )
            check_line(line, text)
            return text
        case Decline():
            return "Declined."
    raise AssertionError(choice)
