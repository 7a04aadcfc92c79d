"""An act that decided ASK_USER, put to its person: the only way an ask becomes ALLOW is
their yes, and even then the act is decided again on the ledger as it is at that moment,
so whatever denies it now (a revocation, an expiry, a limit another act has since reached)
still denies it.
"""

import hashlib
import re
from datetime import datetime, timedelta
from typing import Any

import msgspec

from libs.contracts import codec
from libs.contracts.poa import AskRecord, Decision, GrantRecord
from libs.contracts.problem import Refused
from libs.contracts.rooms import fitted
from services.poa.domain import resolve
from services.poa.domain.decisions import DENY, allow, deny
from services.poa.domain.reading import is_official, money, obj, text

QUOTED = 500  # characters of each thing the question quotes from the act

__all__ = [
    "APPROVED",
    "DECLINED",
    "EXPIRED",
    "QUOTED",
    "REVOKED",
    "answered_as",
    "approved",
    "ask_id",
    "declined",
    "expired",
    "lapsed",
    "opened",
    "outcome",
    "placed",
    "question",
    "revoked",
]

# The project's rules for an ask's outcome, beside the verifier's.
APPROVED, DECLINED, EXPIRED = "principal_approved", "principal_declined", "ask_expired"
REVOKED = "revoked"  # V4's rule: what the person's yes would meet on a revoked grant
OPTIONS = ("Approve", "Decline")


def ask_id(record: GrantRecord, envelope: dict[str, Any]) -> str:
    """The same act on the same grant asks once, however often the agent sends it; the
    person's, nobody else's (it keys their question and its timer, which are not theirs)."""
    named = "\0".join((record.org, record.owner, record.id)).encode()
    digest = hashlib.sha256(named + b"\0" + msgspec.json.encode(envelope, order="sorted"))
    return f"ask_{digest.hexdigest()[:24]}"


def opened(
    record: GrantRecord, decision: Decision, envelope: dict[str, Any], agent: str, now: datetime
) -> AskRecord:
    """What the agent wants to do, in the envelope's own words, and which rule asked."""
    invocation = obj(envelope.get("invocation"))
    arguments = obj(invocation.get("arguments"))
    amount = arguments.get("amount")
    counterparty = obj(arguments.get("counterparty")) or obj(invocation.get("target"))
    purpose = arguments.get("purpose") or obj(envelope.get("context")).get("purpose")
    act = decision.act_id or text(invocation.get("act_id")) or text(invocation.get("effect"))
    return AskRecord(
        id=ask_id(record, envelope),
        org=record.org,
        person=record.owner,
        agent=agent,
        grant_id=record.id,
        act_id=decision.act_id,
        rule_id=decision.rule_id,
        act=_shown(act or "an act"),
        amount=None if amount is None else _shown(_written(amount)),
        currency=_shown(text(arguments.get("currency"))),
        counterparty=_shown(_named(counterparty)),
        purpose=_shown(purpose if isinstance(purpose, str) else None),
        envelope=envelope,
        official=_official(record.grant, envelope),
        asked_at=now,
        expires_at=now + timedelta(seconds=record.ask_expires_s),
    )


def question(ask: AskRecord) -> str:
    """The question in the person's room: the act, its money, with whom, why, who asked.
    What the envelope names is quoted at most `QUOTED` characters each (the envelope may
    be 64 KiB, a message 16,000 characters); the ask holds it whole."""
    parts = [f"Your agent {fitted(ask.agent, QUOTED)} wants to {fitted(ask.act, QUOTED)}"]
    if ask.amount is not None:
        parts.append(
            f"for {fitted(ask.amount, QUOTED)} {fitted(ask.currency or '', QUOTED)}".rstrip()
        )
        if money(_amount_of(ask.envelope)) is None:
            parts[-1] += " (not an amount its limits can count)"
    if ask.counterparty:
        parts.append(f"with {fitted(ask.counterparty, QUOTED)}")
    if ask.purpose:
        parts.append(f"to {fitted(ask.purpose, QUOTED)}")
    expires = ask.expires_at.strftime("%Y-%m-%d %H:%M UTC")
    return (
        " ".join(parts)
        + f". Grant {ask.grant_id} asks you first (rule {ask.rule_id})."
        + f" Unanswered, it is declined at {expires}."
    )


# What would hide in the person's question or reorder it around a quote: zero-width and
# bidi controls (an id written `\u202enozama` reads "amazon"), separators and byte order
# marks, shown by their code point; a line break or tab, which could start a line of the
# agent's words that reads as the system's, is a space.
_HIDING = re.compile(r"[\u200b\u2028-\u202e\u2060-\u2069\ufeff]")
_BREAKING = re.compile(r"[\t\n\r\v\f\x85]")


def _shown(quoted: str | None) -> str | None:
    """What the agent wrote, as the person is shown it in an ask: nothing in it hidden."""
    if quoted is None:
        return None
    return _BREAKING.sub(" ", _HIDING.sub(lambda c: f"<U+{ord(c[0]):04X}>", quoted))


def _amount_of(envelope: dict[str, Any]) -> Any:
    return obj(obj(envelope.get("invocation")).get("arguments")).get("amount")


def _written(amount: Any) -> str:
    """The amount as the person is shown it: the exact number written out (1e2 is 100), or,
    where it is no amount the limits read (text, or past their digits), the JSON the agent
    wrote. Left out, the person was asked to approve an act without being told its money."""
    readable = money(amount)
    return f"{readable:f}" if readable is not None else codec.encode(amount).decode()


def placed(ask: AskRecord, room: str, seq: int) -> AskRecord:
    return msgspec.structs.replace(ask, room=room, question_seq=seq)


def outcome(now_decided: Decision, act_id: str | None) -> Decision:
    """The person's yes against the act decided again now: a DENY stands; an ask (the
    same or another) is what the person has just answered."""
    return now_decided if now_decided.decision == DENY else allow(APPROVED, act_id)


def approved(ask: AskRecord, decision: Decision, now: datetime) -> AskRecord:
    """The ask with its `outcome`."""
    _still_open(ask)
    state = "denied" if decision.decision == DENY else "allowed"
    return msgspec.structs.replace(ask, state=state, decision=decision, answered_at=now)


def declined(ask: AskRecord, now: datetime) -> AskRecord:
    _still_open(ask)
    return _denied(ask, DECLINED, now)


def expired(ask: AskRecord, now: datetime) -> AskRecord:
    """An ask no one answered in time; one already answered is as it was."""
    return ask if ask.state != "open" else _denied(ask, EXPIRED, now)


def lapsed(ask: AskRecord, now: datetime) -> bool:
    """Whether `ask` is open past its expiry: its timer late or lost, it takes no answer,
    and what its timer would do is done by whoever finds it so."""
    return ask.state == "open" and now >= ask.expires_at


def revoked(ask: AskRecord, now: datetime) -> AskRecord:
    """An ask whose grant (or an ancestor) the person revoked: no yes can allow it now, so
    it waits on no one; one already answered is as it was."""
    return ask if ask.state != "open" else _denied(ask, REVOKED, now)


def answered_as(ask: AskRecord, answer: str) -> bool:
    """Whether `ask` stands as `answer` ("approve" or "decline") would have left it:
    declined, or approved (allowed, or denied by the ledger as it was then)."""
    if ask.state == "open" or ask.decision is None:
        return False
    if answer == "decline":
        return ask.decision.rule_id == DECLINED
    return ask.decision.rule_id not in (DECLINED, EXPIRED)


def _denied(ask: AskRecord, rule: str, now: datetime) -> AskRecord:
    return msgspec.structs.replace(
        ask, state="denied", decision=deny(rule, ask.act_id), answered_at=now
    )


def _still_open(ask: AskRecord) -> None:
    if ask.state != "open":
        assert ask.decision is not None
        raise Refused(
            "ask-answered",
            409,
            f"ask {ask.id} is {ask.state} already ({ask.decision.rule_id})",
        )


def _named(counterparty: dict[str, Any]) -> str | None:
    """`{type, id}` as the person reads it: "merchant amazon"."""
    named = [text(counterparty.get(k)) for k in ("type", "id")]
    return " ".join(n for n in named if n) or None


def _official(grant: dict[str, Any], envelope: dict[str, Any]) -> bool:
    """Whether the act counts toward the day's binding acts once allowed (V34, V36)."""
    act = resolve.act(grant, envelope)
    return not isinstance(act, Decision) and is_official(act.authority)
