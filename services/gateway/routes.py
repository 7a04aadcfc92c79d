"""The HTTP API's route table: each route forwards to one subject of the registry."""

import re

import msgspec

from libs.contracts import poa
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


ROUTES: tuple[Route, ...] = (
    Route("POST", "/v1/poa/verify", poa.VERIFY, "Verify an act against grants given whole"),
    Route("POST", "/v1/poa/contain", poa.CONTAIN, "Is a child grant contained in its parent"),
    Route("POST", "/v1/poa/grants", poa.ISSUE, "Issue a root grant in my name", status=201),
    Route("GET", "/v1/poa/grants", poa.LIST, "My grants"),
    Route("GET", "/v1/poa/grants/{id}", poa.GET, "One of my grants"),
    Route("POST", "/v1/poa/grants/{id}/revoke", poa.REVOKE, "Revoke a grant and its descendants"),
    Route("POST", "/v1/poa/grants/{id}/children", poa.DELEGATE, "Delegate a child", status=201),
    Route("POST", "/v1/poa/grants/{id}/acts", poa.ACT, "Verify an act on a grant; record it"),
)
