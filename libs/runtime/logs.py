"""Structured logs: one JSON object per line on stderr."""

import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

import msgspec
from aiohttp.http_exceptions import HttpProcessingError

from libs.contracts.principal import REQUEST_ID_HEADER

__all__ = ["REQUEST", "carried", "configure", "error_text"]

# The request a line is logged for, while one is handled: its id comes with it (a client's
# X-Request-Id, or one the gateway made) and goes on with every call made for it.
REQUEST: ContextVar[str | None] = ContextVar("request", default=None)


def carried() -> dict[str, str]:
    """The header that carries the request being handled, if one is, on to what is asked
    or published for it: a call, an event, a timer (which fires under it)."""
    request = REQUEST.get()
    return {} if request is None else {REQUEST_ID_HEADER: request}


_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
_encode = msgspec.json.Encoder(enc_hook=repr).encode


class _JsonLines(logging.Formatter):
    def __init__(self, service: str, replica: str) -> None:
        super().__init__()
        self._fixed = {"service": service, "replica": replica}

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            **self._fixed,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if (request := REQUEST.get()) is not None:
            line["request"] = request
        line |= {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return _encode(line).decode()


class _ClientFaults(logging.Filter):
    """aiohttp logs a request it cannot parse as an error of its own, with a traceback. It
    is the client's fault, already answered 4xx: a warning that names what was wrong, and
    not the bytes aiohttp quotes beneath it, which may be a header's value (a token)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fault = record.exc_info[1] if record.exc_info else None
        if isinstance(fault, HttpProcessingError) and fault.code < 500:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else None
            record.msg = "a malformed request from %s refused %d: %s"
            record.args = (remote, fault.code, _REASON.sub("", fault.message.partition("\n")[0]))
            record.exc_info = record.exc_text = None
        return True


# From the first bytes aiohttp quotes in a reason ("… when reading: b'…'") to its end.
_REASON = re.compile(r":?\s*((bytearray\()?b?['\"].*)?:?$")
_client_faults = _ClientFaults()


def configure(service: str, replica: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines(service, replica))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.server").addFilter(_client_faults)


def error_text(exc: BaseException) -> str:
    """An exception as a line's `error`: its words, or its type where it has none (a
    timeout says nothing)."""
    return str(exc) or type(exc).__name__
