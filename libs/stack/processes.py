"""Child processes that die with their parent, and a stop that reaps them all."""

import ctypes
import logging
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["spawn", "stop_all"]

_log = logging.getLogger(__name__)
_PR_SET_PDEATHSIG = 1


def spawn(
    argv: Sequence[str], *, name: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` in its own process group, so a terminal's Ctrl-C reaches only us and we
    stop children in order; the kernel sends it SIGTERM if we die, even by SIGKILL."""
    proc = subprocess.Popen(
        argv,
        env=dict(env) if env is not None else None,
        process_group=0,
        preexec_fn=_die_with_parent,
    )
    _log.info("started", extra={"child": name, "pid": proc.pid})
    return proc


def stop_all(
    procs: Iterable[subprocess.Popen[bytes]],
    *,
    grace: float = 10.0,
    hurried: Callable[[], bool] = lambda: False,
    slow: Callable[[], None] = lambda: None,
) -> None:
    """SIGTERM every process (last started first) and wait for them all, `grace` seconds
    at most or until `hurried()`; then SIGKILL what is left, and reap all. `slow()` is
    called once if they are still at it after a second."""
    procs = list(procs)
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    began = time.monotonic()
    told = False
    while any(p.poll() is None for p in procs) and not hurried():
        waited = time.monotonic() - began
        if waited >= grace:
            break
        if waited >= 1 and not told:
            slow()
            told = True
        time.sleep(0.05)
    for proc in reversed(procs):
        if proc.poll() is None:
            _log.warning("killing", extra={"pid": proc.pid})
            proc.kill()
        proc.wait()


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
