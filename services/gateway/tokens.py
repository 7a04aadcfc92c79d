"""Bearer tokens: HS256 JWTs carrying org, roles and, for an agent, the `act` claim."""

import functools
import time

import jwt
import msgspec

from libs.contracts import codec
from libs.contracts.agents import ORG_AGENT, PERSONAL_AGENT
from libs.contracts.chonk import is_chonk_bot
from libs.contracts.principal import Principal
from libs.contracts.problem import Refused

__all__ = [
    "LEEWAY_S",
    "is_delegate",
    "issued_at",
    "mint",
    "principal_from",
    "refused_after",
    "token_expired",
]

_ISSUER = _AUDIENCE = "tether"
LEEWAY_S = 30  # a clock a little behind ours still has its tokens taken


def mint(
    key: str,
    *,
    org: str,
    user: str,
    roles: tuple[str, ...] = (),
    act: str | None = None,
    now: int,
    ttl: int = 12 * 3600,
) -> str:
    """A development token. `act` names the agent acting for `user` (RFC 8693's act claim)."""
    claims: dict[str, object] = {
        "iss": _ISSUER,
        "aud": _AUDIENCE,
        "sub": user,
        "org": org,
        "roles": list(roles),
        "iat": now,
        "exp": now + ttl,
    }
    if act is not None:
        claims["act"] = {"sub": act}
    return jwt.encode(claims, key, algorithm="HS256")


def principal_from(authorization: str | None, key: str) -> Principal:
    """The Principal of a verified `Authorization: Bearer …` header, from its claims alone."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refused("token-missing", 401, "send `Authorization: Bearer <token>`")
    principal, _, expires = _verified(token.strip(), key)
    if time.time() > expires + LEEWAY_S:
        raise token_expired()
    return principal


def refused_after(authorization: str | None, key: str) -> float:
    """When a verified `Authorization` header's token stops being taken (its expiry and
    leeway): a stream it opened ends then, for the client to open it again with a new one."""
    _, _, expires = _verified((authorization or "").partition(" ")[2].strip(), key)
    return expires + LEEWAY_S


def issued_at(authorization: str | None, key: str) -> float:
    """When a verified `Authorization` header's token was issued (its `iat`)."""
    _, issued, _ = _verified((authorization or "").partition(" ")[2].strip(), key)
    return issued


def token_expired() -> Refused:
    return Refused("token-expired", 401, "the token has expired")


# A token's signature and claims verify the same way every time it is sent, and checking
# them was 40% of the gateway's CPU per request (measured with py-spy); only its expiry
# changes with time, so only that is checked again at each use. A refusal is not kept.
@functools.lru_cache(maxsize=4096)
def _verified(token: str, key: str) -> tuple[Principal, float, float]:
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=["HS256"],
            audience=_AUDIENCE,
            issuer=_ISSUER,
            options={"require": ["exp", "iat", "sub"], "verify_exp": False},
            leeway=LEEWAY_S,
        )
    except jwt.InvalidSignatureError as exc:
        raise Refused("token-forged", 401, "the token's signature does not verify") from exc
    except jwt.PyJWTError as exc:
        raise Refused("token-invalid", 401, f"the token is not valid: {exc}") from exc
    if not claims.get("org"):
        raise Refused("token-without-org", 403, "the token names no org; there is no default")
    expires, issued = claims["exp"], claims["iat"]
    if not isinstance(expires, int | float) or not isinstance(issued, int | float):
        raise Refused("token-invalid", 401, "the token's exp and iat must be NumericDates")
    try:
        principal = msgspec.convert(
            {
                "org": claims["org"],
                "sub": claims["sub"],
                "roles": claims.get("roles", []),
                "act": _actor(claims),
            },
            Principal,
        )
    except msgspec.ValidationError as exc:
        why = codec.explained(exc)
        raise Refused("token-invalid", 401, f"the token's claims are not valid: {why}") from exc
    act = principal.act or ""
    if (own := PERSONAL_AGENT.match(act)) and own[1] != principal.sub:
        raise Refused(
            "act-not-for-sub",
            403,
            f"{act} is {own[1]}'s own agent; it cannot act for {principal.sub}",
        )
    if (org_agent := ORG_AGENT.match(act)) and org_agent[1] != principal.org:
        raise Refused("act-not-of-org", 403, f"{act} acts in {org_agent[1]}, not {principal.org}")
    if is_chonk_bot(principal.org, act):  # an org's bot made under its id before it was kept
        why = f"{act} is a Chonk's bot, which acts through the chonk service alone"
        raise Refused("act-reserved", 403, why)
    return principal, issued, expires


def is_delegate(principal: Principal) -> bool:
    """An agent that is neither the person's own nor their org's (a grant's delegate): it
    reaches only the grants of the person's that name it."""
    act = principal.act
    return act is not None and not (PERSONAL_AGENT.match(act) or ORG_AGENT.match(act))


def _actor(claims: dict[str, object]) -> str | None:
    """RFC 8693's `act`: absent, or an object whose `sub` names the acting party. Anything
    else present is not read as "nobody acts" (that would make it the person)."""
    if "act" not in claims:
        return None
    act = claims["act"]
    sub = act.get("sub") if isinstance(act, dict) else None
    if not isinstance(sub, str) or not sub.strip():
        raise Refused("token-act-invalid", 401, 'the token\'s act claim must be {"sub": <agent>}')
    return sub
