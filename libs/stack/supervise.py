"""Keeping `tether up`'s children running, as a process manager would.

A child that exits is logged with its name and exit status and started again after a pause
that doubles from half a second to ten. One that crashes more than `RESTARTS` times within
`WITHIN_S` seconds is not a passing fault: the supervisor names it and everything stops.
"""

import collections
import functools
import logging
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from libs.model import REPLY_TIMEOUT_S
from libs.stack.processes import spawn, stop_all

__all__ = ["ASKER", "FRONT", "GRACE_S", "RESTARTS", "SERVICE", "WITHIN_S", "Supervisor", "pause"]

RESTARTS, WITHIN_S = 5, 60.0
# The order of a stop: the front (the gateway) first, so the requests it holds still find
# their services; then the services that ask a model, so the reply each holds still finds
# the services it goes to; then the others, each draining through the servers; then the
# servers.
FRONT, ASKER, SERVICE, SERVER = range(4)
# How long a stage is waited for before what is left of it is killed: a request or an
# event takes seconds, a model's reply up to its timeout (as Kubernetes' grace, k8s.py).
GRACE_S = {FRONT: 10.0, ASKER: REPLY_TIMEOUT_S + 15.0, SERVICE: 10.0, SERVER: 10.0}
_log = logging.getLogger(__name__)


def pause(crashes: int) -> float:
    """How long to wait before starting a child again after its `crashes`-th recent crash."""
    return min(10.0, 0.5 * 2 ** max(0, crashes - 1))


class _Child:
    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        proc: subprocess.Popen,
        *,
        stage: int,
    ) -> None:
        self.name, self.argv, self.env, self.proc = name, list(argv), env, proc
        self.stage = stage
        self.crashes: collections.deque[float] = collections.deque()
        self.start_at: float | None = None  # set while it waits to be started again


class Supervisor:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._children: list[_Child] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        stage: int = SERVICE,
    ) -> subprocess.Popen[bytes]:
        proc = spawn(argv, name=name, env=env)
        self._children.append(_Child(name, argv, env, proc, stage=stage))
        return proc

    def adopt(self, name: str, server: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        """Supervise a server started elsewhere; it is started again with its own argv, and
        stopped after everything `start`ed, which reaches it."""
        self._children.append(_Child(name, server.args, None, server, stage=SERVER))  # type: ignore[arg-type]
        return server

    def stop(self, hurried: Callable[[], bool] = lambda: False) -> None:
        """Everything stopped, stage by stage: each stage's processes at once, and the next
        stage only once they have all exited, or been killed past the stage's grace or once
        `hurried()`. A stage still at it after a second says who holds it up."""
        for stage, grace in GRACE_S.items():
            children = [c for c in self._children if c.stage == stage and c.start_at is None]
            slow = functools.partial(_holding, children, grace)
            stop_all((c.proc for c in children), grace=grace, hurried=hurried, slow=slow)

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        """Every child running now, in the order they were first started."""
        return [c.proc for c in self._children if c.start_at is None]

    def check(self) -> str | None:
        """Start again what exited, once its pause is over; the name of a child that crashed
        too often, if one did."""
        now = self._clock()
        for child in self._children:
            if child.start_at is not None:
                if now >= child.start_at:
                    child.proc = spawn(child.argv, name=child.name, env=child.env)
                    child.start_at = None
                    _log.warning("restarted", extra={"child": child.name, "pid": child.proc.pid})
                continue
            status = child.proc.poll()
            if status is None:
                continue
            child.crashes.append(now)
            while child.crashes and child.crashes[0] < now - WITHIN_S:
                child.crashes.popleft()
            _log.error(
                "exited",
                extra={"child": child.name, "status": status, "recent_crashes": len(child.crashes)},
            )
            if len(child.crashes) > RESTARTS:
                return child.name
            child.start_at = now + pause(len(child.crashes))
        return None


def _holding(children: list[_Child], grace: float) -> None:
    _log.info(
        "waiting for what they hold to finish; a second Ctrl-C or SIGTERM stops them at once",
        extra={"children": [c.name for c in children if c.proc.poll() is None], "grace_s": grace},
    )
