"""Every kind of bad input gets its own clear 4xx problem, and none reaches a service."""

import codecs
import logging
import time

import jwt
import pytest

from tests.support import KEY, bearer, token

JSON = {"Content-Type": "application/json"}


def _expired() -> str:
    now = int(time.time())
    claims = {"iss": "tether", "aud": "tether", "sub": "acme/ada", "org": "acme"}
    return jwt.encode(claims | {"iat": now - 7200, "exp": now - 3600}, KEY, algorithm="HS256")


CASES = [
    ("malformed JSON", bearer() | JSON, b'{"text": ', 400, "malformed-json"),
    ("an unknown field", bearer() | JSON, b'{"text": "x", "colour": "red"}', 422,
     "invalid-request"),
    ("a wrong type", bearer() | JSON, b'{"text": 5}', 422, "invalid-request"),
    ("a body that is not an object", bearer() | JSON, b'["x"]', 422, "invalid-request"),
    ("an identity field", bearer() | JSON, b'{"text": "x", "org": "evil"}', 422,
     "identity-in-body"),
    ("a wrong content type", bearer() | {"Content-Type": "text/plain"}, b"x", 415,
     "unsupported-media-type"),
    ("an oversized body", bearer() | JSON, b'{"text": "' + b"x" * (1024 * 1024) + b'"}', 413,
     "body-too-large"),
    ("a missing token", JSON, b'{"text": "x"}', 401, "token-missing"),
    ("an expired token", bearer(_expired()) | JSON, b'{"text": "x"}', 401, "token-expired"),
    ("a forged token", bearer(jwt.encode({"sub": "acme/ada", "org": "acme", "iss": "tether",
     "aud": "tether", "iat": 1, "exp": 2**40}, "not-the-key-" * 4, algorithm="HS256")) | JSON,
     b'{"text": "x"}', 401, "token-forged"),
    ("a token without an org", bearer(token(org=None)) | JSON, b'{"text": "x"}', 403,
     "token-without-org"),
    ("a token with a malformed org", bearer(token(org="Not An Org")) | JSON, b'{"text": "x"}', 401,
     "token-invalid"),
    ("a name given twice", bearer() | JSON, b'{"text": "x", "text": "y"}', 422, "duplicate-key"),
    ("a name given twice deeper down", bearer() | JSON,
     b'{"text": "x", "more": [{"a": 1, "b": 2, "a": 3}]}', 422, "duplicate-key"),
    ("JSON nested 10,000 deep", bearer() | JSON,
     b'{"text": "x", "deep": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", 422, "nesting-too-deep"),
    ("JSON nested past the edge's limit", bearer() | JSON,
     b'{"text": "x", "deep": ' + b"[" * 70 + b"]" * 70 + b"}", 422, "nesting-too-deep"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "headers", "body", "status", "rule"), CASES, ids=[c[0] for c in CASES]
)
async def test_bad_input_is_refused_before_any_service(
    client, echo, case, headers, body, status, rule
):
    response = await client.post("/v1/echo", data=body, headers=headers)
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (status, f"urn:tether:problem:{rule}")
    assert response.content_type == "application/problem+json"
    assert problem["status"] == status and problem["detail"]
    assert echo.handled == []


async def test_a_401_names_the_bearer_scheme_and_whether_the_token_sent_was_refused(client):
    """RFC 9110 §15.5.2 and RFC 6750 §3: a 401 carried no WWW-Authenticate, which a client
    reads to learn how to authenticate."""
    none = await client.post("/v1/echo", json={"text": "x"})
    assert none.status == 401
    assert none.headers["WWW-Authenticate"] == 'Bearer realm="tether"'
    expired = await client.post("/v1/echo", json={"text": "x"}, headers=bearer(_expired()))
    assert expired.status == 401
    assert expired.headers["WWW-Authenticate"] == 'Bearer realm="tether", error="invalid_token"'
    allowed = await client.post("/v1/echo", json={"text": "x"}, headers=bearer())
    assert allowed.status == 201 and "WWW-Authenticate" not in allowed.headers
    # And no answer names the Python and aiohttp versions behind it.
    assert {r.headers["Server"] for r in (none, expired, allowed)} == {"tether"}


async def test_at_debug_each_answer_is_a_log_line_a_refusal_too(client, caplog):
    """A client reports a request by the X-Request-Id its answer carried; a refusal reached
    no service, and no line anywhere named it. At DEBUG the gateway writes one per answer."""
    caplog.set_level(logging.DEBUG, logger="services.gateway.middlewares")
    await client.post("/v1/echo", json={"text": "x", "colour": "red"}, headers=bearer())
    await client.post("/v1/echo", json={"text": "x"}, headers=bearer())
    answered = [
        (r.method, r.route, r.status) for r in caplog.records if r.getMessage() == "answered"
    ]
    assert answered == [("POST", "/v1/echo", 422), ("POST", "/v1/echo", 201)]


async def test_an_unknown_route_is_a_problem_too(client):
    response = await client.get("/v1/nothing-here", headers=bearer())
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (404, "urn:tether:problem:not-found")
    assert problem["detail"] == "no route GET /v1/nothing-here"
    assert problem["title"] == "not found"  # as every rule's title is written


async def test_a_method_a_route_does_not_take_is_named_with_those_it_does(client):
    response = await client.delete("/v1/echo", headers=bearer())
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (405, "urn:tether:problem:method-not-allowed")
    assert problem["detail"] == f"/v1/echo takes {response.headers['Allow']}, not DELETE"
    assert problem["title"] == "method not allowed"


async def test_the_unknown_field_is_named(client):
    response = await client.post("/v1/echo", json={"text": "x", "colour": "red"}, headers=bearer())
    assert "colour" in (await response.json(content_type=None))["detail"]


async def test_an_unknown_query_parameter_is_refused_by_name(client, echo):
    """Issue 10.9: a parameter the route does not take is never silently ignored."""
    response = await client.get("/v1/echo/hi?delay_ms=1&person=acme/bob", headers=bearer())
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (422, "urn:tether:problem:unknown-query-parameter")
    assert problem["errors"] == ["person"] and "person" in problem["detail"]
    posted = await client.post("/v1/echo?user=acme/bob", json={"text": "x"}, headers=bearer())
    assert posted.status == 422
    assert echo.handled == []


async def test_a_query_parameter_given_twice_is_refused_by_name(client, echo):
    """Which of two values was meant cannot be known; before, the first was taken."""
    response = await client.get("/v1/echo/hi?delay_ms=1&delay_ms=900", headers=bearer())
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (
        422, "urn:tether:problem:repeated-query-parameter"
    )  # fmt: skip
    assert problem["errors"] == ["delay_ms"] and "delay_ms" in problem["detail"]
    assert echo.handled == []


async def test_a_body_on_a_route_that_takes_none_is_refused(client, echo):
    """A field sent where no body is read would be ignored, silently, as an unknown query
    parameter would; before, it was."""
    url = "/v1/echo/hi?delay_ms=1"
    sent = await client.get(url, data=b'{"person": "acme/bob"}', headers=bearer() | JSON)
    problem = await sent.json(content_type=None)
    assert (sent.status, problem["type"]) == (422, "urn:tether:problem:body-not-taken")
    assert (
        problem["detail"] == "GET /v1/echo/{text} takes no body: what it names is in the path"
        " or the query (delay_ms)"
    )
    assert (await client.get(url, data=b"x", headers=bearer())).status == 422
    assert echo.handled == []
    for nothing in (b"", b"  ", b"{}", b"{ }\n"):
        assert (await client.get(url, data=nothing, headers=bearer() | JSON)).status == 200
    assert len(echo.handled) == 4


async def test_a_known_query_parameter_still_reaches_the_service(client, echo):
    response = await client.get("/v1/echo/hi?delay_ms=1", headers=bearer())
    assert response.status == 200
    assert [s.text for s in echo.handled] == ["hi"]


async def test_brackets_inside_strings_are_not_nesting(client, echo):
    """The edge counts the brackets outside strings only: text full of them, escaped quotes
    and backslashes among them, is as deep as its structure."""
    text = '[{"\\' * 40 + "]}" * 40
    response = await client.post("/v1/echo", json={"text": text}, headers=bearer())
    assert response.status == 201, await response.text()
    assert [s.text for s in echo.handled] == [text]


async def test_no_answer_is_kept_by_a_cache_or_read_as_another_type(client, echo):
    """Each answer is one caller's: before, a proxy or a browser was free to keep one."""
    answered = await client.get("/v1/echo/hi", headers=bearer())
    refused = await client.get("/v1/echo/hi?person=acme/bob", headers=bearer())
    assert (answered.status, refused.status) == (200, 422)
    for response in (answered, refused):
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_half_a_surrogate_pair_is_refused_naming_it(client, echo):
    """Python's reader takes `"\ud800"`, msgspec refuses it: it said "Input data was
    truncated" of a body that was whole."""
    for text in (rb'"a\ud800b"', rb'"a\udc00"', rb'"\ud800"'):
        response = await client.post(
            "/v1/echo", data=b'{"text": ' + text + b"}", headers=bearer() | JSON
        )
        problem = await response.json(content_type=None)
        assert (response.status, problem["type"]) == (400, "urn:tether:problem:malformed-json")
        assert "half of a UTF-16 surrogate pair" in problem["detail"], problem
    # A pair, escaped whole, is a character; an escaped backslash before `u` is no escape.
    for text in (rb'"\ud83d\ude00"', rb'"\\ud800"'):
        response = await client.post(
            "/v1/echo", data=b'{"text": ' + text + b"}", headers=bearer() | JSON
        )
        assert response.status == 201, await response.text()


async def test_a_byte_order_mark_is_refused_naming_it(client, echo):
    """RFC 8259 §8.1 lets a reader refuse one; msgspec said "invalid character (byte 0)"."""
    response = await client.post(
        "/v1/echo", data=codecs.BOM_UTF8 + b'{"text": "hi"}', headers=bearer() | JSON
    )
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (400, "urn:tether:problem:malformed-json")
    assert "byte-order mark" in problem["detail"], problem


async def test_a_post_its_path_gives_whole_takes_no_body_at_all(client, echo):
    """A client posts nothing to a route whose path says everything (an agent removed, a
    draft kept), often with no Content-Type at all: before, that was 415, as if it had sent
    something else. Such a route takes no body, or an empty object; anything in one is
    refused by name. A route that takes a body still refuses none, as a PUT of no
    preferences would otherwise empty them."""
    for headers, body in ((bearer(), None), (bearer() | JSON, b"{}")):
        response = await client.post("/v1/echo/hi/again", data=body, headers=headers)
        assert (response.status, (await response.json())["text"]) == (200, "hi")
    something = await client.post("/v1/echo/hi/again", json={"text": "x"}, headers=bearer())
    assert (await something.json())["type"] == "urn:tether:problem:body-not-taken"
    nothing = await client.post("/v1/echo", headers=bearer())
    assert (await nothing.json(content_type=None))["type"] == (
        "urn:tether:problem:unsupported-media-type"
    )
    assert [said.text for said in echo.handled] == ["hi", "hi"]
