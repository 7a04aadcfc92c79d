"""Child processes that die with their parent, and a stop that reaps them all."""

import ctypes
import logging
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence

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


def stop_all(procs: Iterable[subprocess.Popen[bytes]], *, grace: float = 10.0) -> None:
    """SIGTERM every process (last started first), wait, SIGKILL what is left, reap all."""
    procs = list(procs)
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in reversed(procs):
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _log.warning("killing", extra={"pid": proc.pid})
            proc.kill()
            proc.wait()


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
