"""Dead letters: what a reader parked after every retry failed, read back and sent again.

A parked message keeps where it came from (its subject, stream and sequence) and why it
was parked (`consumer.py`). Once the cause is fixed (a model provider back, a bug mended),
it is sent again to its subject, as a new message: its readers take it as they took it
before, and since every handler is safe to repeat, those that handled it then change
nothing while the one that parked it handles it now. Sent, it leaves DEAD.
"""

from datetime import datetime

import msgspec
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from libs.audit.trail import Trail
from libs.contracts.principal import REQUEST_ID_HEADER, Principal
from libs.contracts.streams import DEAD, dead_subject
from libs.runtime.consumer import SYSTEM_ORG
from libs.runtime.direct import DirectGetUnavailable, batch_get

__all__ = ["Parked", "parked", "sent_again"]

_BATCH = 256


class Parked(msgspec.Struct, frozen=True):
    """A dead letter: its place on DEAD, the reader that parked it
    (`<service>.<durable>`), the subject it was published on, why, when, and the request it
    came from, if it came from one."""

    seq: int
    reader: str
    subject: str
    error: str
    at: datetime
    data: bytes
    request: str | None = None


async def parked(nc: Client, reader: str | None = None) -> list[Parked]:
    """Every dead letter, or `reader`'s (`SERVICE.DURABLE`, or a service's every reader),
    oldest first: batched direct gets, no consumer. Nothing where no service has made DEAD
    yet; a DEAD that does not answer for a moment raises, so it is never read as holding
    nothing."""
    if reader is None:
        subjects = dead_subject(">")
    else:
        subjects = dead_subject(reader if "." in reader else f"{reader}.>")
    found: list[Parked] = []
    after, more = 0, True
    while more:
        request = {"seq": after + 1, "next_by_subj": subjects, "batch": _BATCH}
        try:
            msgs, pending = await batch_get(nc, DEAD.name, request)
        except DirectGetUnavailable:
            # No one answered: no stream yet (nothing was ever parked), or its leader being
            # elected, a transient failure that must not read as nothing parked.
            try:
                await nc.jetstream().stream_info(DEAD.name)
            except NotFoundError:
                return found
            raise
        for msg in msgs:
            headers = msg.headers or {}
            found.append(
                Parked(
                    seq=int(headers["Nats-Sequence"]),
                    reader=headers["Nats-Subject"].removeprefix(dead_subject("")),
                    subject=headers.get("Tether-Dead-Subject", ""),
                    error=headers.get("Tether-Dead-Error", ""),
                    at=datetime.fromisoformat(headers["Nats-Time-Stamp"]),
                    data=msg.data,
                    request=headers.get(REQUEST_ID_HEADER),
                )
            )
        more = bool(msgs) and pending > 0
        after = found[-1].seq if found else after
    return found


async def sent_again(nc: Client, letter: Parked, trail: Trail, by: Principal) -> None:
    """`letter` published again to its subject, then removed from DEAD, recorded first on
    the system's own chain as `by`'s act, as its parking was. Its id makes a second
    sending within the stream's duplicate window store nothing more, should the removal
    have failed the first time."""
    js = nc.jetstream()
    async with trail.change(
        SYSTEM_ORG,
        actor=by,
        action="reader.dead_letter.send_again",
        target=f"{DEAD.name}:{letter.seq}",
        data={"reader": letter.reader, "subject": letter.subject},
    ):
        headers = {"Nats-Msg-Id": f"sent-again-{letter.seq}"}
        if letter.request is not None:  # handled again under the request it came from
            headers[REQUEST_ID_HEADER] = letter.request
        await js.publish(letter.subject, letter.data, headers=headers)
        await js.delete_msg(DEAD.name, letter.seq)
