"""The HTTP API's route table: each route forwards to one subject of the registry."""

import re

import msgspec

from libs.contracts.registry import Subject

__all__ = ["ROUTES", "Route"]


class Route(msgspec.Struct, frozen=True):
    """`method path` → `subject`. Path parameters and `query` names become request fields."""

    method: str
    path: str
    subject: Subject
    summary: str
    status: int = 200
    query: tuple[str, ...] = ()

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.path))

    @property
    def has_body(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH")


ROUTES: tuple[Route, ...] = ()
