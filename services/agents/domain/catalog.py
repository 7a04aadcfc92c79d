"""The plan catalog: the one place a capacity limit or the hourly rate is written.

Capacity refuses, runtime bills, and neither does the other's job (hip-0524 §13).
"""

from decimal import Decimal
from typing import Literal

import msgspec

__all__ = ["UNLIMITED", "Catalog", "Limits", "Plan", "allowed", "load_catalog"]

UNLIMITED = -1


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How many org agents and bots may exist (-1 is unlimited; a person's own agent is
    not among them: each person has exactly one, on every plan), and how many people and
    bots one room may hold (always a number: a room's membership is written in bounded
    time or not at all)."""

    agents: int
    bots: int
    room_members: int


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    limits: Limits
    personal_line: bool


class Runtime(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    agent_hour_usd: Decimal


class Catalog(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    runtime: Runtime
    plans: dict[str, Plan]


def load_catalog(raw: bytes) -> Catalog:
    catalog = msgspec.json.decode(raw, type=Catalog)
    if "free" not in catalog.plans:
        raise ValueError("the catalog has no free plan, and every org starts on it")
    for name, plan in catalog.plans.items():
        for kind in ("agents", "bots"):
            if getattr(plan.limits, kind) < UNLIMITED:
                raise ValueError(f"plan {name}: {kind} must be -1 (unlimited) or at least 0")
    if catalog.runtime.agent_hour_usd < 0:
        raise ValueError("the hourly rate cannot be negative")
    return catalog


def allowed(plan: Plan, kind: Literal["agent", "bot"]) -> int:
    return plan.limits.agents if kind == "agent" else plan.limits.bots
