"""Who is asking, and the agent acting for them where one is."""

from typing import Annotated

import msgspec

from libs.contracts.base import Contract, Name, OrgId

__all__ = ["PRINCIPAL_HEADER", "Principal", "UserId"]

# The principal travels in this header, never in a body: only the gateway and services
# (by their NATS permissions) can publish to request subjects, so only they set it.
PRINCIPAL_HEADER = "Tether-Principal"

# A person's id is `<owner>/<name>`; the owner half is their home org.
UserId = Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}/[A-Za-z0-9._-]{1,64}$")]


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
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @property
    def is_agent(self) -> bool:
        return self.act is not None

    @property
    def home_org(self) -> str | None:
        """The owner half of a person's id; None for a service."""
        owner, slash, _ = self.sub.partition("/")
        return owner if slash else None
