"""Issue 10.5: the `act` claim is bound to `sub`, on every route of the table."""

import time

import jwt
import pytest

from services.gateway.routes import ROUTES
from tests.support import KEY, bearer, token

TOKEN_ROUTES = [r for r in ROUTES if r.kind != "webhook"]
MALFORMED_ACTS = [{}, 123, [], ["agent:acme/ada"], {"sub": None}, {"sub": ""}, "agent:acme/ada"]


@pytest.fixture
async def gateway(client_for, gateway_settings):
    """The whole route table with no service behind it: what passes the token is 503."""
    return await client_for(gateway_settings, services=())


def _with_act(act: object) -> dict[str, str]:
    now = int(time.time())
    claims = {"iss": "tether", "aud": "tether", "sub": "acme/ada", "org": "acme", "act": act}
    return bearer(jwt.encode(claims | {"iat": now, "exp": now + 600}, KEY, algorithm="HS256"))


def _path(route) -> str:
    values = {"id": "r-0123456789abcdef", "seq": "1", "draft": "d-0123456789abcdef-1",
              "transport": "sms", "publisher": "acme", "layer": "user",
              "cadence": "weekly"}  # fmt: skip
    return route.path.format(**values)


async def _rule(response) -> tuple[int, str]:
    body = await response.json(content_type=None)
    return response.status, body["type"].rsplit(":", 1)[-1]


@pytest.mark.parametrize("act", MALFORMED_ACTS, ids=repr)
async def test_a_present_but_malformed_act_is_401_on_every_route(gateway, act):
    for route in TOKEN_ROUTES:
        response = await gateway.request(
            route.method, _path(route), json={}, headers=_with_act(act)
        )
        assert await _rule(response) == (401, "token-act-invalid"), (route.method, route.path)


async def test_one_persons_agent_cannot_act_for_another_on_any_route(gateway):
    bob_as_ada_agent = bearer(token(user="acme/bob", act="agent:acme/ada"))
    for route in TOKEN_ROUTES:
        response = await gateway.request(route.method, _path(route), json={},
                                         headers=bob_as_ada_agent)  # fmt: skip
        assert await _rule(response) == (403, "act-not-for-sub"), (route.method, route.path)


async def test_a_grants_delegate_reaches_only_the_routes_of_the_grants_that_name_it(gateway):
    delegate = bearer(token(user="acme/ada", act="urn:example:agent:a_456"))
    for route in TOKEN_ROUTES:
        response = await gateway.request(route.method, _path(route), json={}, headers=delegate)
        status, rule = await _rule(response)
        if route.delegates:  # past the gateway (to poa, which holds it to the grants naming it)
            assert status in (422, 503) and rule != "delegate-not-admitted", route.path
        else:
            assert (status, rule) == (403, "delegate-not-admitted"), (route.method, route.path)
    assert {r.path for r in TOKEN_ROUTES if r.delegates} == {
        "/v1/poa/asks/{id}",
        "/v1/poa/grants/{id}/acts",
        "/v1/poa/grants/{id}/children",
    }


async def test_an_org_agent_or_bot_acts_in_its_own_org_alone(gateway):
    for act in ("bot:globex:standup", "agent:globex", "agent:globex:helper"):
        response = await gateway.get("/v1/rooms", headers=bearer(token(act=act)))
        assert await _rule(response) == (403, "act-not-of-org"), act
    # Past it, to whether the agent stands: unread where no agents service ever ran on this
    # bus, and never made where one did.
    for act in ("bot:acme:standup", "agent:acme"):
        response = await gateway.get("/v1/rooms", headers=bearer(token(act=act)))
        assert await _rule(response) in {(503, "org-agent-unread"), (401, "act-not-standing")}


async def test_a_persons_own_agent_passes_the_token_check(gateway):
    own = bearer(token(user="acme/ada", act="agent:acme/ada"))
    response = await gateway.get("/v1/rooms", headers=own)
    assert await _rule(response) == (503, "service-unavailable")
