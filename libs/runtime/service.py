"""A service process: its connection, its subjects in its queue group, and a clean drain.

    async with Service(CONTRACT) as svc:
        store = await Store.open(svc.js)
        await svc.serve(handlers.table(store))

`serve` returns after SIGTERM (or `stop()`), once every request in flight has its reply.
"""

import asyncio
import contextlib
import logging
import secrets
import signal
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import msgspec
import nats.errors
import uvloop
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import StreamConfig
from nats.js.errors import APIError, BadRequestError

from libs.contracts import codec, streams
from libs.contracts.health import Health
from libs.contracts.principal import (
    BEFORE_HEADER,
    PRINCIPAL_HEADER,
    REQUEST_ID_HEADER,
    REQUEST_KEY_HEADER,
    Principal,
)
from libs.contracts.problem import Problem, Refused, Unavailable
from libs.contracts.registry import ServiceContract, Subject
from libs.runtime import bus, logs, metrics
from libs.runtime.consumer import Consumer
from libs.runtime.kv import led
from libs.runtime.locks import KeyedLocks
from libs.runtime.ops import RELEASE, start_ops_server
from libs.runtime.replies import Answer, Replies, digest, of_caller
from libs.runtime.settings import BadSetting, Settings

__all__ = [
    "Handler",
    "Service",
    "Stopped",
    "ensure_shared_streams",
    "ensure_stream",
    "request_before",
    "request_digest",
    "request_key",
    "run",
]

Handler = Callable[[Any, Principal], Awaitable[msgspec.Struct]]

_log = logging.getLogger(__name__)
_HEADERS_ROOM = 4096  # of the bus's max payload, kept for a reply's headers
_decode_principal = msgspec.json.Decoder(Principal).decode
# The key of the request being handled and its digest, if its client keyed it.
_keyed: ContextVar[tuple[str, bytes] | None] = ContextVar("keyed", default=None)
# When the caller of the request being handled stops waiting, if it said.
_before: ContextVar[datetime | None] = ContextVar("before", default=None)


def request_before() -> datetime | None:
    """When the caller of the request being handled stops waiting, less the time the answer
    takes back, if it said (`Tether-Before`): work done past it no one is told of."""
    return _before.get()


def request_key() -> str | None:
    """The key of the request being handled, if its client keyed it: what a handler stores
    once under (each request is handled in a task of its own)."""
    keyed = _keyed.get()
    return None if keyed is None else keyed[0]


def request_digest() -> bytes:
    """The digest of the keyed request being handled, kept with what is stored under its
    key to tell the same request sent again from another sent with the same key."""
    keyed = _keyed.get()
    assert keyed is not None, "only a keyed request has a digest"
    return keyed[1]


class Stopped(Exception):
    """A service stopped before it served: `run` ends it as any stop does, with status 0."""


class Service:
    def __init__(
        self, contract: ServiceContract, settings: Settings | None = None, *, signals: bool = True
    ) -> None:
        self.contract = contract
        self.settings = settings or Settings.from_env(contract.name)
        self._signals = signals
        self._stop = asyncio.Event()
        self._broken: BaseException | None = None
        self.serving = asyncio.Event()
        self._started = time.monotonic()
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(self.settings.max_in_flight)
        # A keyed request's copies in this replica, one at a time, so the second finds the
        # first's kept answer at once; a claim in `replies` holds them apart across replicas.
        self._keyed = KeyedLocks()
        self.ops_port = 0

    async def __aenter__(self) -> "Service":
        s = self.settings
        if self._signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        # Alive from the start, ready only while serving: a replica waiting for its server
        # is not one to restart.
        self._ops = await start_ops_server(
            s.metrics_host,
            s.metrics_port,
            ready=lambda: self.serving.is_set() and self.nc.is_connected,
        )
        self.ops_port = self._ops.addresses[0][1]
        self.nc, first = await bus.connecting(
            s.nats_url, user=s.nats_user, password=s.nats_password, name=s.replica
        )
        if not await self._until_connected(first):
            await self.__aexit__()
            raise Stopped(f"{self.contract.name} was stopped before it reached NATS")
        self.js: JetStreamContext = self.nc.jetstream()
        await ensure_shared_streams(self.js, self.contract.shared_streams, replicas=s.js_replicas)
        self.replies = await Replies.open(self.js, self.contract.name, replicas=s.js_replicas)
        metrics.IN_FLIGHT.labels(self.contract.name).set_function(lambda: len(self._tasks))
        _log.info("started", extra={"ops_port": self.ops_port, "version": RELEASE})
        return self

    async def _until_connected(self, first: asyncio.Task[None]) -> bool:
        """Until the first connect (True) or a stop (False): a replica stopped while it
        waits for its server, in an outage or a rollout, leaves at once, cleanly (letting
        its connection go cancels the connect)."""
        stopped = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait((first, stopped), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not first.done():
            return False
        first.result()  # a connect that failed, failing here
        return True

    async def __aexit__(self, *_: object) -> None:
        await bus.let_go(self.nc)
        await self._ops.cleanup()
        _log.info("stopped")

    def stop(self) -> None:
        self._stop.set()

    async def serve(
        self, table: Mapping[Subject, Handler], consumers: Sequence[Consumer] = ()
    ) -> None:
        """Serve `table` and the health subject, and read with `consumers`, until stopped;
        then drain: stop taking requests and reading, finish what is in hand."""
        unknown = [s.name for s in table if s not in self.contract.subjects]
        if unknown:
            raise ValueError(f"{self.contract.name} does not own {unknown}")
        subs = [await self._subscribe(self.contract.health, self._health)]
        for subject, handler in table.items():
            subs.append(await self._subscribe(subject, handler))
        # Subscribed at the server before it says it serves, and before its readers' pulls
        # and acks share the connection.
        await bus.flushed(self.nc)
        reading = [asyncio.create_task(c.run(self.settings.pull_wait)) for c in consumers]
        for task in reading:
            task.add_done_callback(self._reader_ended)
        self.serving.set()
        try:
            await self._stop.wait()
        finally:
            _log.info("draining", extra={"in_flight": len(self._tasks)})
            for consumer in consumers:
                consumer.stop()
            for sub in subs:
                # With the server gone there is no interest there to take back.
                if self.nc.is_connected:
                    with contextlib.suppress(nats.errors.Error):  # gone while draining
                        await sub.drain()
            await asyncio.gather(*self._tasks, *reading, return_exceptions=True)
        if self._broken is not None:
            raise self._broken

    def _reader_ended(self, task: asyncio.Task[None]) -> None:
        """A reader that stops by itself (its consumer could not be made, say) stops the
        service with it, loudly, rather than leave it serving with nothing read."""
        if task.cancelled() or task.exception() is None:
            return
        _log.error("a reader stopped; the service stops with it", exc_info=task.exception())
        self._broken = task.exception()
        self._stop.set()

    async def _subscribe(self, subject: Subject, handler: Handler) -> Any:
        decode = codec.decoder(subject.request).decode

        async def on_message(msg: Msg) -> None:
            await self._slots.acquire()
            task = asyncio.create_task(self._handle(subject, handler, decode, msg))
            self._tasks.add(task)
            task.add_done_callback(self._finished)

        return await self.nc.subscribe(subject.served, queue=self.contract.name, cb=on_message)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def _handle(
        self,
        subject: Subject,
        handler: Handler,
        decode: Callable[[bytes], Any],
        msg: Msg,
    ) -> None:
        started = time.perf_counter()
        logs.REQUEST.set((msg.headers or {}).get(REQUEST_ID_HEADER))
        key = (msg.headers or {}).get(REQUEST_KEY_HEADER)
        keyed = None if key is None else (key, digest(subject.name, msg.data))
        _keyed.set(keyed)
        before = _instant((msg.headers or {}).get(BEFORE_HEADER))
        _before.set(before)

        async def answer() -> Answer:
            try:
                request = decode(msg.data or b"{}")
                principal = None if subject.public else _principal_of(msg, subject)
                body = codec.encode(await handler(request, principal))  # type: ignore[arg-type]
            except Exception as exc:  # every failure becomes a typed problem reply
                return Answer.of(_problem_of(exc, subject))
            if len(body) > self.nc.max_payload - _HEADERS_ROOM:
                return Answer.of(_too_large(subject, len(body), self.nc.max_payload))
            return Answer(body)

        if before is not None and datetime.now(UTC) >= before:
            reply = Answer.of(_late(subject, before))
        elif keyed is None or subject.keyed_itself:
            reply = await answer()
        else:
            kept = of_caller(_caller(msg), keyed[0]) if subject.by_caller else keyed[0]
            try:
                async with self._keyed.hold(kept):
                    reply = await self.replies.once(kept, keyed[1], answer)
            except Exception as exc:  # the kept answers could not be read: ask again
                reply = Answer.of(_problem_of(exc, subject))
        if msg.reply:
            await self.nc.publish(msg.reply, reply.body, headers=reply.headers)
        service = self.contract.name
        metrics.child(metrics.REQUESTS, service, subject.name, reply.outcome).inc()
        metrics.child(metrics.REQUEST_SECONDS, service, subject.name).observe(
            time.perf_counter() - started
        )

    async def _health(self, _: object, __: object) -> Health:
        return Health(
            service=self.contract.name,
            replica=self.settings.replica,
            ok=self.nc.is_connected and not self._stop.is_set(),
            uptime_s=round(time.monotonic() - self._started, 3),
            in_flight=len(self._tasks),
        )


def run(main: Callable[[Settings], Awaitable[None]], service: str) -> None:
    """The entry point of a service process: settings from the environment, JSON logs. A
    setting it cannot take (its own, or one `main` reads) stops it with one line naming
    the variable."""
    try:
        settings = Settings.from_env(service)
        logs.configure(service, settings.replica, settings.log_level)
        uvloop.run(main(settings))
    except BadSetting as exc:
        raise SystemExit(f"{service}: {exc}") from None
    except APIError as exc:
        # The one setting the bus judges: its streams and buckets at more replicas than it
        # has servers, refused as it starts.
        if exc.err_code not in _REPLICAS_REFUSED:
            raise
        raise SystemExit(
            f"{service}: TETHER_JS_REPLICAS={settings.js_replicas}: NATS cannot place a "
            f"stream or bucket at that many replicas: {exc.description}"
        ) from None
    except Stopped:
        pass  # its "stopped" is logged


# JetStream's refusals of a stream's replicas: more than one on a server alone, and not
# servers enough in its cluster to place them on (too few, or some offline: its words say
# which, and the supervisor starts the service again).
_REPLICAS_REFUSED = {10074, 10005}


def _principal_of(msg: Msg, subject: Subject) -> Principal:
    if subject.by_caller:
        return Principal(org="tether", sub=f"service:{_caller(msg)}")
    raw = (msg.headers or {}).get(PRINCIPAL_HEADER)
    if raw is None:
        raise Refused("principal-missing", 401, f"request has no {PRINCIPAL_HEADER} header")
    try:
        return _decode_principal(raw)
    except msgspec.DecodeError as exc:
        raise Refused("principal-invalid", 401, f"{PRINCIPAL_HEADER}: {exc}") from exc


def _instant(raw: str | None) -> datetime | None:
    """A `Tether-Before` header's instant; one that is not (or names no offset, so no
    instant), as none: the caller is only waiting, and its request is done as any other."""
    try:
        before = None if raw is None else datetime.fromisoformat(raw)
    except ValueError:
        return None
    return before if before is not None and before.tzinfo is not None else None


def _caller(msg: Msg) -> str:
    """A by-caller subject's caller: its last token, as the caller's credential allows."""
    return msg.subject.rsplit(".", 1)[-1]


def _late(subject: Subject, before: datetime) -> Problem:
    """A request its caller stopped waiting for (this replica was stalled, or so busy it
    queued): done now, it would be a change no one is told of, or work for no one."""
    waited = before.isoformat()
    detail = f"{subject.name} came past its caller's wait ({waited}): nothing was done"
    # Said, since many at once mean a replica overloaded, or a clock apart from its callers'.
    _log.warning("a request came past its caller's wait", extra={"detail": detail})
    return Refused("request-late", 503, detail).problem


def _too_large(subject: Subject, size: int, most: int) -> Problem:
    """An answer the bus would refuse to carry. Never sent, it would leave its caller
    waiting for nothing until its timeout, then asking again for the same."""
    _log.error("a reply too large for the bus", extra={"subject": subject.name, "bytes": size})
    return Refused(
        "reply-too-large",
        500,
        f"the answer to {subject.name} is {size:,} bytes; the bus carries {most:,} a message, "
        "headers and all",
    ).problem


def _problem_of(exc: Exception, subject: Subject) -> Problem:
    match exc:
        case Refused() | Unavailable():
            return exc.problem
        case msgspec.ValidationError():
            said = codec.explained(exc)
            return Refused("invalid-request", 422, f"{subject.request.__name__}: {said}").problem
        case msgspec.DecodeError():
            return Refused("malformed-json", 400, f"request body is not JSON: {exc}").problem
        case RecursionError():
            return Refused("nesting-too-deep", 422, f"{subject.request.__name__}: {exc}").problem
        case _ if isinstance(exc, bus.AWAY):
            # Answered 503, so its caller knows to ask again.
            _log.warning(
                "bus unavailable", extra={"subject": subject.name, "error": logs.error_text(exc)}
            )
            return Refused(
                "bus-unavailable", 503, f"{subject.name}: the bus did not answer; ask again"
            ).problem
    # Named in the answer and in the log line with the traceback: what a client reports
    # is found among every replica's lines. The request's id where it has one.
    incident = logs.REQUEST.get() or secrets.token_hex(6)
    _log.exception("handler failed", extra={"subject": subject.name, "incident": incident})
    detail = f"{subject.name} failed; the service logged why as incident {incident}"
    return Refused("internal", 500, detail).problem


async def ensure_shared_streams(
    js: JetStreamContext, names: Iterable[str], *, replicas: int = 1
) -> None:
    for name in names:
        await ensure_stream(js, streams.SHARED[name], replicas=replicas)


async def ensure_stream(js: JetStreamContext, stream: streams.StreamSpec, *, replicas: int) -> None:
    config = StreamConfig(
        name=stream.name,
        subjects=list(stream.subjects),
        description=stream.description,
        allow_direct=True,
        num_replicas=replicas,
        max_age=stream.max_age_s or None,
        duplicate_window=stream.duplicate_window_s or None,
    )
    try:
        await js.add_stream(config)
    except BadRequestError as exc:
        # Another replica or version created it with other settings: keep theirs, but add
        # the subjects this version stores on, or its publishes would find no stream, and
        # keep messages, and their ids, as long as this version says (a stream made before
        # its limits gets them on the first start after an upgrade).
        _log.info("stream exists", extra={"stream": stream.name, "error": str(exc)})
        existing = (await js.stream_info(stream.name)).config
        missing = [s for s in stream.subjects if s not in (existing.subjects or [])]
        window = config.duplicate_window or existing.duplicate_window
        aged = (existing.max_age or None) != config.max_age
        if missing or aged or existing.duplicate_window != window:
            existing.subjects = [*(existing.subjects or []), *missing]
            existing.max_age, existing.duplicate_window = config.max_age, window
            await js.update_stream(existing)
    await led(js, stream.name)
