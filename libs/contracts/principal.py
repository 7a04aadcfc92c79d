"""Who is asking, and the agent acting for them where one is."""

from libs.contracts.base import Contract, Name, OrgId

__all__ = [
    "BEFORE_HEADER",
    "PRINCIPAL_HEADER",
    "REQUEST_ID_HEADER",
    "REQUEST_KEY_HEADER",
    "Principal",
]

# The principal travels in this header, never in a body: only the gateway and services
# (by their NATS permissions) can publish to request subjects, so only they set it.
PRINCIPAL_HEADER = "Tether-Principal"
# A request the client keyed (HTTP's Idempotency-Key) carries its key to the service, as
# this digest of the caller and the key: a service that stores something stores it once
# under it, however often a failover makes the request run again.
REQUEST_KEY_HEADER = "Tether-Request-Key"
# The id of the request a call is made for, from the gateway on: each process's log lines
# for it name it, so one request is followed from the gateway through every service.
REQUEST_ID_HEADER = "Tether-Request-Id"
# When the caller stops waiting, less the time its answer takes back (ISO 8601, with its
# offset): a service comes to no request past it, since no one would be told what it did.
# A header, so that a keyed request asked again is still the same request.
BEFORE_HEADER = "Tether-Before"


class Principal(Contract):
    """The verified identity behind a request.

    `org` is the org the request is made in; `sub` the person (`owner/name`) or a service
    (`service:<name>`); `roles` the person's roles in `org`; `act` the agent acting for `sub`,
    or None when the person acts themself.
    """

    org: OrgId
    sub: Name
    roles: tuple[str, ...] = ()
    act: Name | None = None

    @property
    def is_agent(self) -> bool:
        return self.act is not None

    @property
    def is_own_agent(self) -> bool:
        """The person's own agent (`act` is `agent:<sub>`): what it says in a room is a
        reply its person's ladder decides (hip-0524 §4)."""
        return self.act == f"agent:{self.sub}"
