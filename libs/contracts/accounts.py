"""`tether.evt.accounts.account.created`: an account exists, so its person gets their agent.

Published by whatever creates accounts (the identity provider's hook; `tether up` for its
development accounts). No tether service owns accounts; the agents service reads this.
"""

from libs.contracts.base import Contract, UserId
from libs.contracts.registry import Event

__all__ = ["ACCOUNT_CREATED", "AccountCreated"]


class AccountCreated(Contract):
    """`user` is `<home org>/<name>`."""

    user: UserId


ACCOUNT_CREATED = Event(
    "tether.evt.accounts.account.created",
    AccountCreated,
    "an account was created: its person's one agent is made",
    readers=frozenset({"agents"}),
)
