"""An email's thread (RFC 5322 §3.6.4): what a reply by a person's email line carries so
the correspondent's mail client shows it under the mail it answers, not as a new
conversation with no subject."""

import re

import msgspec

__all__ = ["Answering", "Thread", "answering", "thread_of"]

# A mail's References can name its whole thread; a reply names the newest of them.
REFERENCES_KEPT = 20
_SUBJECT_MOST = 255
_MESSAGE_ID = re.compile(r"<[^<>\s]{1,250}>")
_ANSWERED = re.compile(r"(?i)re\s*:")


class Thread(msgspec.Struct, frozen=True):
    """The last mail a correspondent wrote in a room: its subject, its Message-ID, and the
    ids of the mails it follows, oldest first."""

    subject: str
    message_id: str
    references: tuple[str, ...] = ()


class Answering(msgspec.Struct, frozen=True):
    """The headers of a reply to a thread's last mail."""

    subject: str
    in_reply_to: str
    references: tuple[str, ...]


def thread_of(subject: str, message_id: str, headers: dict[str, str]) -> Thread | None:
    """The thread an arriving mail is the last of; None for a Message-ID that is none."""
    found = _MESSAGE_ID.search(message_id) or _MESSAGE_ID.search(f"<{message_id.strip()}>")
    if found is None:
        return None
    follows = _MESSAGE_ID.findall(headers.get("references", "") or headers.get("in-reply-to", ""))
    one_line = " ".join(subject.split())[:_SUBJECT_MOST]
    return Thread(one_line, found.group(0), tuple(follows[-REFERENCES_KEPT:]))


def answering(thread: Thread) -> Answering:
    """A reply's subject ("Re: " once), In-Reply-To and References (its last ones)."""
    subject = thread.subject
    if subject and not _ANSWERED.match(subject):
        subject = f"Re: {subject}"
    references = (*thread.references, thread.message_id)[-REFERENCES_KEPT:]
    return Answering(subject, thread.message_id, references)
