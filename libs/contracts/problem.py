"""The typed problem reply (RFC 9457 in shape) and the exception that carries it."""

from libs.contracts.base import Contract

__all__ = ["KEY_REUSED", "PROBLEM_HEADER", "KeyReused", "Problem", "Refused", "Unavailable"]

# A reply carrying this header is a Problem; its value is the HTTP status.
PROBLEM_HEADER = "Tether-Problem"
KEY_REUSED = "idempotency-key-reused"


class Problem(Contract, omit_defaults=True):
    """Why a request was refused.

    `type` names the rule (`urn:tether:problem:<rule>`), `status` is the HTTP status the
    gateway answers with, `detail` says what exactly was wrong with this request, and
    `errors`, when there are several things wrong, names each. `index` names the item of a
    list that was wrong (a patch's op), and `version` the current version of what a write
    lost a compare-and-set on. `retry_after` is the seconds after which asking again may
    be answered otherwise (a limit's end), and the answer's Retry-After.
    """

    type: str
    title: str
    status: int
    detail: str = ""
    errors: tuple[str, ...] = ()
    index: int | None = None
    version: int | None = None
    retry_after: int | None = None

    @property
    def rule(self) -> str:
        return self.type.rsplit(":", 1)[-1]


class Refused(Exception):
    """Raised by a handler to answer with a problem instead of a reply."""

    def __init__(
        self,
        rule: str,
        status: int,
        detail: str,
        *,
        errors: tuple[str, ...] = (),
        index: int | None = None,
        version: int | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.problem = Problem(
            type=f"urn:tether:problem:{rule}",
            title=rule.replace("-", " "),
            status=status,
            detail=detail,
            errors=errors,
            index=index,
            version=version,
            retry_after=retry_after,
        )


class KeyReused(Refused):
    """An Idempotency-Key sent again with another request than the one it first ran."""

    def __init__(self) -> None:
        super().__init__(KEY_REUSED, 422, "this Idempotency-Key was used for another request")


class Unavailable(Exception):
    """A transient failure of a service asked (a 5xx problem, a timeout, no responders):
    asking again may succeed, so it is never taken as a final refusal."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.detail)
        self.problem = problem
