"""Reading a stream with a durable pull consumer shared by a service's replicas.

Each message is read into a Struct (`read`; `events` reads JSON by subject) and handed to
its handler, which branches on it with `match`; it is acked when the handler returns. What
happens when that fails depends on the failure, never confused:

- a refusal (it cannot be read, or the handler raised a 4xx `Refused`): asking again
  gets the same answer, so it is dropped, logged;
- a transient failure (`Unavailable`, a 5xx `Refused`, any other exception, a replica that
  died holding it): redelivered, to this or another replica, after a delay that doubles
  from `Retry.first_s` up to `Retry.most_s`; after `Retry.attempts` deliveries it is
  parked on the DEAD stream (`tether.dead.<service>.<durable>`, headers naming where it
  came from and why), counted, logged, and handed to `dead` so its owner can record it
  and tell the person whose thing it was (`dead` gets the message as read, and why; a
  transient failure of `dead` parks it again later, a refusal leaves it parked).

Handlers must therefore be safe to repeat.
"""

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from prometheus_client import Counter, Histogram

from libs.contracts.principal import REQUEST_ID_HEADER
from libs.contracts.problem import KEY_REUSED, Refused, Unavailable
from libs.contracts.streams import dead_subject
from libs.runtime import logs
from libs.runtime.bus import AWAY, PEER_OR_BUS_AWAY
from libs.runtime.metrics import child

if TYPE_CHECKING:
    from libs.audit.trail import Trail

__all__ = ["RETRY", "Consumer", "Retry", "events"]

T = TypeVar("T")

_log = logging.getLogger(__name__)
_BATCH = 256
# A cluster elects each consumer's leader within seconds of starting; a durable still not
# there after this is not coming (a permission refused is never answered, only timed out).
_SUBSCRIBE_WITHIN_S = 10.0
SYSTEM_ORG = "tether"  # the chain of what belongs to no org: the system's own acts
DEAD_LETTERS = Counter(
    "tether_dead_letters", "Messages parked after every retry failed, by reader.", ["durable"]
)
RETRIES = Counter(
    "tether_redeliveries", "Messages handed back for another try, by reader.", ["durable"]
)
LAG = Histogram(
    "tether_reader_lag_seconds",
    "From a message's arrival in its stream to its reader's acknowledgement, by reader: how "
    "far behind what is published a reader is (its retries included).",
    ["durable"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
)


class Retry(msgspec.Struct, frozen=True):
    """How a transient failure is tried again: delays doubling from `first_s` to `most_s`,
    `attempts` deliveries in all (the default gives up after about two minutes)."""

    first_s: float = 0.5
    most_s: float = 30.0
    attempts: int = 10

    def delay(self, delivered: int) -> float:
        return min(self.most_s, self.first_s * 2 ** max(0, delivered - 1))


RETRY = Retry()


def _said(told: "asyncio.Future[None]") -> None:
    """An in-progress word that did not reach the server (the bus away) is said again a
    third of the ack wait later; its failure is read here so it is never left unread."""
    if not told.cancelled():
        told.exception()


def events(types: Mapping[str, type]) -> Callable[[Msg], Any]:
    """Read each message as the JSON Struct its subject carries: `types` maps a subject (a
    filter such as `agents.run.ended.>` is matched token by token) to its type."""
    decoders = {subject: msgspec.json.Decoder(t) for subject, t in types.items()}

    def read(msg: Msg) -> Any:
        for subject, decoder in decoders.items():
            if _matches(subject, msg.subject):
                return decoder.decode(msg.data)
        raise msgspec.ValidationError(f"no event is read from {msg.subject}")

    return read


def _matches(filter_: str, subject: str) -> bool:
    want, got = filter_.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(got) > i
        if i >= len(got) or token not in ("*", got[i]):
            return False
    return len(want) == len(got)


class Consumer(Generic[T]):
    def __init__(
        self,
        js: JetStreamContext,
        *,
        stream: str,
        durable: str,
        subjects: Sequence[str],
        read: Callable[[Msg], T],
        handle: Callable[[T], Awaitable[None]],
        service: str | None = None,
        in_order: bool = False,
        in_order_of: Callable[[T], str | None] | None = None,
        new_only: bool = False,
        max_in_flight: int = 64,
        ack_wait: float = 30,
        retry: Retry = RETRY,
        dead: Callable[[T, str], Awaitable[None]] | None = None,
        trail: "Trail | None" = None,
    ) -> None:
        """`in_order` handles one message at a time across every replica (max_ack_pending
        1), for a reader whose state depends on the order it reads in. `in_order_of` names
        what a message is about (None: nothing in particular): a replica handles the
        messages it holds about one thing in the order they came, each once the one before
        it is done, and the rest at once. `new_only` makes a durable that does not exist
        yet read only what comes after it is made, not what its stream kept before (a
        reader added by a release, of events that release did not act on). A message a replica
        took goes to another `ack_wait` seconds after that replica last said it is at work
        on it (it died). Every wait in a handler is bounded (a bus request, a model's
        reply), so none holds its message for good. `service` names the
        reader's service where the durable is not named for it. With `trail`, every dead
        letter is also a record on the system's own chain (org `tether`)."""
        self._js, self._stream, self._durable = js, stream, durable
        self._subjects, self._read, self._handle = list(subjects), read, handle
        self._pending = 1 if in_order else max_in_flight
        self._ack_wait, self._retry, self._dead, self._trail = ack_wait, retry, dead, trail
        self._dead_subject = f"{dead_subject(service or durable)}.{durable}"
        self._in_order_of, self._new_only = in_order_of, new_only
        self._slots = asyncio.Semaphore(self._pending)
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Task[None]] = {}  # the newest in hand about each thing
        self._stop = asyncio.Event()

    async def run(self, wait: float) -> None:
        """Fetch and handle until `stop()`, then finish what is in hand. Each pull waits
        `wait` seconds for new messages, and a stop waits for the pull in flight, so that
        nothing it delivers is left unacknowledged until `ack_wait`: what it brings after
        the stop is handed back at once."""
        one = len(self._subjects) == 1
        config = ConsumerConfig(
            name=self._durable,
            durable_name=self._durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self._ack_wait,
            max_ack_pending=self._pending,
            filter_subject=self._subjects[0] if one else None,
            filter_subjects=None if one else self._subjects,
            deliver_policy=DeliverPolicy.NEW if self._new_only else None,
        )
        sub = await self._subscribed(config)
        while sub is not None and not self._stop.is_set():
            try:
                msgs = await sub.fetch(min(self._pending, _BATCH), timeout=wait)
            except TimeoutError:  # nothing new
                continue
            except Exception as exc:
                # The bus reconnecting, or the consumer's leader being elected, is said in
                # one line; anything else with its trace.
                trace = None if isinstance(exc, AWAY) else exc
                extra = {"durable": self._durable, "error": repr(exc)}
                _log.warning("fetch failed", exc_info=trace, extra=extra)
                await asyncio.sleep(0.5)
                continue
            for msg in msgs:
                if self._stop.is_set():
                    # Brought by the pull a stop waited for: handed back unhandled, so a
                    # service shutting down starts no work that its peers, draining too,
                    # could not answer. Another replica takes it at once.
                    await msg.nak()
                    continue
                await self._slots.acquire()
                about, event = self._about(msg)
                after = self._last.get(about or "")
                task = asyncio.create_task(self._one(msg, event, after=after))
                self._tasks.add(task)
                task.add_done_callback(functools.partial(self._done, about))
                if about is not None:
                    self._last[about] = task
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if sub is not None:
            await sub.unsubscribe()

    async def _subscribed(self, config: ConsumerConfig) -> JetStreamContext.PullSubscription | None:
        """The durable, made, or made what this release asks for: one a release before
        made reads the subjects (and waits the ack wait) this one names, where a durable
        found and used as it was never read what an upgrade subscribes to. Asked again
        while the bus or the consumer's leader is away (a cluster starting elects one per
        consumer), each failure said in one line, for `_SUBSCRIBE_WITHIN_S`; past that the
        reader stops, and its service with it, loudly (a durable it may not make never
        answers at all). None if stopped first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _SUBSCRIBE_WITHIN_S
        while not self._stop.is_set():
            try:
                await self._js.add_consumer(self._stream, config)
                return await self._js.pull_subscribe_bind(
                    durable=self._durable, stream=self._stream
                )
            except AWAY as exc:
                if loop.time() > deadline:
                    raise
                extra = {"durable": self._durable, "error": repr(exc)}
                _log.warning("subscribe failed", extra=extra)
                await asyncio.sleep(0.5)
        return None

    def stop(self) -> None:
        self._stop.set()

    def _about(self, msg: Msg) -> tuple[str | None, Any]:
        """What `in_order_of` says the message is about, and the message as read, so that
        `_one` does not read it again; (None, None) without `in_order_of`, or for one it
        cannot read, which `_one` reads and refuses."""
        if self._in_order_of is None:
            return None, None
        try:
            event = self._read(msg)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None, None
        return self._in_order_of(event), event

    def _done(self, about: str | None, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if about is not None and self._last.get(about) is task:
            del self._last[about]
        self._slots.release()

    async def _one(
        self, msg: Msg, event: Any = None, *, after: asyncio.Task[None] | None = None
    ) -> None:
        where = {"subject": msg.subject, "durable": self._durable}
        logs.REQUEST.set((msg.headers or {}).get(REQUEST_ID_HEADER))  # what published it
        try:
            with self._at_work(msg):
                if after is not None:  # it never raises: `_one` settles each message
                    await asyncio.wait([after])
                await self._handle(self._read(msg) if event is None else event)
            await msg.ack()
            arrived = msg.metadata.timestamp.timestamp()  # the stream's own clock
            child(LAG, self._durable).observe(max(0.0, time.time() - arrived))
            return
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            error = str(exc)
        except Refused as exc:
            if exc.problem.status >= 500:
                await self._again(msg, f"{exc.problem.rule}: {exc}")
                return
            error = f"{exc.problem.rule}: {exc}"
        except PEER_OR_BUS_AWAY as exc:  # a peer or the bus is away: nothing to trace
            _log.warning(
                "handling failed; it will be tried again",
                extra={**where, "error": logs.error_text(exc)},
            )
            rule = exc.problem.rule if isinstance(exc, Unavailable) else "bus-unavailable"
            await self._again(msg, f"{rule}: {exc}")
            return
        except Exception as exc:
            _log.warning("handling failed; it will be tried again", exc_info=True, extra=where)
            await self._again(msg, f"{type(exc).__name__}: {exc}")
            return
        # Handling it again would refuse it again: say why, once, and drop it.
        _log.warning("message refused; dropped", extra={**where, "error": error})
        await msg.term()

    @contextlib.contextmanager
    def _at_work(self, msg: Msg) -> Iterator[None]:
        """While the handler runs, the server is told it is still at work, a third of the
        ack wait apart: a handler slower than the ack wait (a model's reply can take a
        minute) would otherwise have its message handed to another replica meanwhile and
        carried out twice. A replica that dies stops telling, and its message goes to
        another after the ack wait, as before. Timed by the loop, so a handler quicker than
        a third of the wait (most) costs no task."""
        loop = asyncio.get_running_loop()
        every = self._ack_wait / 3

        def tell() -> None:
            nonlocal handle
            task = asyncio.ensure_future(msg.in_progress())
            task.add_done_callback(_said)
            handle = loop.call_later(every, tell)

        handle = loop.call_later(every, tell)
        try:
            yield
        finally:
            handle.cancel()

    async def _again(self, msg: Msg, error: str) -> None:
        delivered = msg.metadata.num_delivered or 1
        if delivered < self._retry.attempts:
            child(RETRIES, self._durable).inc()
            await msg.nak(delay=self._retry.delay(delivered))
            return
        try:
            await self._park(msg, error, delivered)
        except Exception as exc:  # not parked yet: it stays, and comes back to be parked
            where = {"durable": self._durable, "subject": msg.subject}
            if _transient(exc):  # its owner's hook, or the trail, away: expected while it lasts
                _log.warning(
                    "a dead letter could not be parked yet; it comes back to be parked",
                    extra={**where, "error": logs.error_text(exc)},
                )
            else:
                _log.exception("could not park a dead letter", extra=where)
            await msg.nak(delay=self._retry.most_s)
            return
        await msg.term()

    async def _park(self, msg: Msg, error: str, delivered: int) -> None:
        seq = msg.metadata.sequence.stream
        headers = {
            "Tether-Dead-Subject": msg.subject,
            "Tether-Dead-Stream": self._stream,
            "Tether-Dead-Seq": str(seq),
            "Tether-Dead-Error": error[:1000],
            "Nats-Msg-Id": f"dead-{self._stream}-{seq}-{self._durable}",
            **logs.carried(),  # the request it came from, for the operator to follow
        }
        await self._js.publish(self._dead_subject, msg.data, headers=headers)
        # Parked again (its owner or the trail could not take it yet): in DEAD once, and
        # recorded once under the same id, asked again each time, since a record that
        # failed after DEAD took the letter is made only by a later parking. One parked
        # again with another error finds its key taken: recorded, with the first.
        if self._trail is not None:
            try:
                await self._trail.append(
                    SYSTEM_ORG,
                    actor=None,
                    action="reader.dead_letter",
                    target=f"{self._stream}:{seq}",
                    data={"durable": self._durable, "subject": msg.subject, "error": error[:1000]},
                    key=headers["Nats-Msg-Id"],
                )
            except Refused as exc:
                if exc.problem.rule != KEY_REUSED:
                    raise
        if self._dead is not None:
            try:
                await self._dead(self._read(msg), error)
            except Refused as exc:
                if exc.problem.status >= 500:
                    raise  # parked again later, and its owner told then
                # Final: asked again it would refuse again, and the letter would come back
                # every try for good. Parked, and logged.
                _log.warning(
                    "a dead letter's owner refused it; parked all the same",
                    extra={"durable": self._durable, "error": f"{exc.problem.rule}: {exc}"},
                )
        child(DEAD_LETTERS, self._durable).inc()
        _log.error(
            "gave up after every retry; parked as a dead letter",
            extra={
                "subject": msg.subject,
                "stream_seq": seq,
                "durable": self._durable,
                "deliveries": delivered,
                "error": error,
                "parked_on": self._dead_subject,
            },
        )


def _transient(exc: Exception) -> bool:
    """A failure that asking again may mend: a peer or the bus away, a 5xx."""
    if isinstance(exc, Refused):
        return exc.problem.status >= 500
    return isinstance(exc, PEER_OR_BUS_AWAY)
