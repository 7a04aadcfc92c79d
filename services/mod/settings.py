"""The mod service's own configuration, beside every service's (libs.runtime.settings)."""

import os
from collections.abc import Mapping

import msgspec

from libs.runtime.settings import BadSetting, Positive, converted
from services.mod.domain.review import reviewer

__all__ = ["ModSettings"]


class ModSettings(msgspec.Struct, frozen=True, kw_only=True):
    """
    | variable             | default      | meaning                                        |
    |----------------------|--------------|------------------------------------------------|
    | TETHER_MOD_DRAFT_TTL | 86400 (24 h) | seconds an open draft lives before it expires  |
    | TETHER_MOD_REVIEWER  | (none)       | the reviewer of installs: empty or "manifest"  |
    """

    draft_ttl: Positive = 86400.0
    reviewer: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "ModSettings":
        env = os.environ if env is None else env
        settings = converted(cls, {f: env[v] for v, f in _ENV.items() if env.get(v)}, _ENV)
        try:
            reviewer(settings.reviewer)
        except ValueError as exc:
            raise BadSetting(f"TETHER_MOD_REVIEWER={settings.reviewer!r}: {exc}") from None
        return settings


_ENV = {"TETHER_MOD_DRAFT_TTL": "draft_ttl", "TETHER_MOD_REVIEWER": "reviewer"}
