"""Structured logs: one JSON object per line on stderr."""

import logging
import sys
from datetime import UTC, datetime

import msgspec

__all__ = ["configure"]

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
        line |= {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return _encode(line).decode()


def configure(service: str, replica: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines(service, replica))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
