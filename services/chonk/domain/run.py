"""One run's configuration (§1): the charter's allowlists intersected with the tenant's
enabled tools and the run's function modes, which can only remove entries."""

import msgspec

from services.chonk.domain.types import RoleCharter

__all__ = ["RunConfig", "configure"]


class RunConfig(msgspec.Struct, frozen=True):
    chonk_id: str
    tools: frozenset[str]
    actions: frozenset[str]
    chaser: bool


def configure(
    charter: RoleCharter,
    *,
    tenant_tools: frozenset[str] | None = None,
    tenant_actions: frozenset[str] | None = None,
    removed_by_modes: frozenset[str] = frozenset(),
) -> RunConfig:
    """None enables everything the charter allows; nothing here can add an entry."""
    tools = (
        charter.tool_allowlist if tenant_tools is None else charter.tool_allowlist & tenant_tools
    )
    actions = charter.action_allowlist
    if tenant_actions is not None:
        actions &= tenant_actions
    return RunConfig(
        chonk_id=charter.chonk_id,
        tools=tools - removed_by_modes,
        actions=actions - removed_by_modes,
        chaser=charter.sub_agents.get("chaser", False),
    )
