"""Proving a line before it receives: a six-digit code sent through the line's transport to
its address, good for ten minutes and five tries (issue 10.6). Until then nothing that
arrives there is taken, and nobody learns whether the address is anyone else's.

The ten minutes and five tries are the person's for the transport, whatever they claim in
them: claiming again within them sends a new code (three at most) and keeps the tries
left and the time, so five guesses in ten minutes is all anyone gets, and an address gets
three codes from one person in that time."""

import hashlib
import hmac
import math
from datetime import datetime, timedelta
from typing import Literal

import msgspec

from libs.contracts.problem import Refused
from libs.contracts.rooms import Transport

__all__ = [
    "CODES",
    "CODE_TTL",
    "TRIES",
    "Attempt",
    "Claim",
    "attempt",
    "claim",
    "code_text",
    "live",
]

CODE_TTL = timedelta(minutes=10)
TRIES = 5
CODES = 3
Attempt = Literal["proven", "wrong", "spent", "expired"]


class Claim(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A line its person asked to connect, waiting for the code; the credential sealed."""

    org: str
    person: str
    transport: Transport
    address: str
    sealed: bytes
    salt: str
    digest: str
    expires_at: datetime
    tries_left: int = TRIES
    forward_to: str | None = None
    codes_sent: int = 1


def claim(
    org: str,
    person: str,
    transport: Transport,
    address: str,
    sealed: bytes,
    *,
    code: str,
    salt: str,
    now: datetime,
    forward_to: str | None = None,
    before: Claim | None = None,
) -> Claim:
    """A claim, `before` the person's earlier one for the transport, if any: while its ten
    minutes run, the new one keeps them and its tries left, and counts one more code."""
    if forward_to is not None and transport != "voice":
        raise Refused("invalid-request", 422, "forward_to is a voice line's alone")
    if forward_to == address:  # each call it forwards would ring it again, without end
        raise Refused("invalid-request", 422, f"forward_to is the line itself, {address}")
    made = Claim(
        forward_to=forward_to,
        org=org,
        person=person,
        transport=transport,
        address=address,
        sealed=sealed,
        salt=salt,
        digest=_digest(salt, code),
        expires_at=now + CODE_TTL,
    )
    if before is None or now >= before.expires_at:
        return made
    until = f"{before.expires_at:%H:%M:%S} UTC"
    after = math.ceil((before.expires_at - now).total_seconds())
    if before.tries_left <= 0:
        raise Refused(
            "claim-limit", 429, f"no tries left at a {transport} code; claim again after {until}",
            retry_after=after,
        )  # fmt: skip
    if before.codes_sent >= CODES:
        raise Refused(
            "claim-limit", 429,
            f"{CODES} {transport} codes sent already; claim again after {until}",
            retry_after=after,
        )  # fmt: skip
    return msgspec.structs.replace(
        made,
        expires_at=before.expires_at,
        tries_left=before.tries_left,
        codes_sent=before.codes_sent + 1,
    )


def attempt(claim: Claim, code: str, now: datetime) -> tuple[Attempt, Claim]:
    """What a try at the code comes to, and the claim after it (one try fewer if wrong)."""
    if now >= claim.expires_at:
        return "expired", claim
    if claim.tries_left <= 0:
        return "spent", claim
    if hmac.compare_digest(claim.digest, _digest(claim.salt, code)):
        return "proven", claim
    after = msgspec.structs.replace(claim, tries_left=claim.tries_left - 1)
    return ("spent" if after.tries_left <= 0 else "wrong"), after


def live(claim: Claim, now: datetime) -> bool:
    """Whether the claim still waits for its code: in its time, with tries left."""
    return now < claim.expires_at and claim.tries_left > 0


def code_text(code: str) -> str:
    return f"Your tether code is {code}. It connects this line to your agent for 10 minutes."


def _digest(salt: str, code: str) -> str:
    return hashlib.sha256(f"{salt}:{code}".encode()).hexdigest()
