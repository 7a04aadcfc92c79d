"""The gateway in front of a real service over a real bus."""

import asyncio
import re
import time

import pytest
from openapi_spec_validator import validate
from redis.asyncio import Redis

from libs.contracts.principal import Principal
from libs.contracts.problem import Refused
from services.gateway.limits import IdempotencyKeys, Late, Stored
from tests.gateway.conftest import ROUTES
from tests.personal.conftest import eventually, problem
from tests.support import ECHO, bearer, gateway_metrics, token


async def test_the_principal_comes_from_the_verified_claims_alone(client):
    agent = token(roles=["admin"], act="agent:acme/ada")
    response = await client.post("/v1/echo", json={"text": "hi"}, headers=bearer(agent))
    assert response.status == 201
    assert (await response.json())["principal"] == {
        "org": "acme", "sub": "acme/ada", "roles": ["admin"], "act": "agent:acme/ada"
    }  # fmt: skip


async def test_path_and_query_become_request_fields(client, echo):
    response = await client.get("/v1/echo/hello?delay_ms=1", headers=bearer())
    assert (response.status, (await response.json())["text"]) == (200, "hello")
    assert echo.handled[0].delay_ms == 1


@pytest.mark.parametrize("written", ["1_0", "%205", "+5", "%D9%A5", "5.0", "9" * 17, ""])
async def test_an_integer_in_a_query_is_written_in_ascii_digits(client, echo, written):
    """`int` took "1_0" as 10, " 5" and "+5" as 5, and an Arabic-Indic five as 5."""
    response = await client.get(f"/v1/echo/hello?delay_ms={written}", headers=bearer())
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (422, "urn:tether:problem:invalid-request")
    assert problem["detail"] == "query 'delay_ms' must be an integer of 1 to 16 digits"
    assert echo.handled == []


async def test_a_services_problem_keeps_its_status(client):
    response = await client.post("/v1/echo", json={"text": "refuse"}, headers=bearer())
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (409, "urn:tether:problem:echo-refuses")


async def test_a_service_that_failed_is_a_500_naming_its_request(client):
    """The client can report which failure it met: the request's id, which its answer
    carries, names the incident, and the service's log line with the traceback too."""
    headers = {**bearer(), "X-Request-Id": "req-42.retry:1"}
    response = await client.post("/v1/echo", json={"text": "fail"}, headers=headers)
    problem = await response.json(content_type=None)
    assert (response.status, problem["type"]) == (500, "urn:tether:problem:internal")
    assert response.headers["X-Request-Id"] == "req-42.retry:1"
    assert problem["detail"] == "tether.echo.say failed; the service logged why as incident " + (
        "req-42.retry:1"
    )


async def test_every_answer_names_its_request_one_made_where_the_client_gave_none(client):
    made = await client.get("/v1/echo/x", headers=bearer())
    assert made.status == 200 and re.fullmatch(r"[0-9a-f]{16}", made.headers["X-Request-Id"])
    refused = await client.get("/nowhere", headers={"X-Request-Id": "a b\u00e9" + "x" * 70})
    assert refused.status == 404
    assert re.fullmatch(r"[0-9a-f]{16}", refused.headers["X-Request-Id"])  # not a token: made
    again = await client.get("/v1/echo/x", headers=bearer())
    assert again.headers["X-Request-Id"] != made.headers["X-Request-Id"]


async def test_a_service_with_no_replica_is_unavailable(client):
    response = await client.post("/v1/other", json={"text": "x"}, headers=bearer())
    assert response.status == 503
    assert (await response.json(content_type=None))[
        "detail"
    ] == "no replica serves tether.other.say"


async def test_an_idempotency_key_replays_the_first_answer(client, echo, org):
    headers = bearer() | {"Idempotency-Key": org}
    first = await client.post("/v1/echo", json={"text": "once"}, headers=headers)
    again = await client.post("/v1/echo", json={"text": "once"}, headers=headers)
    assert (first.status, again.status) == (201, 201)
    assert await first.read() == await again.read()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert [r.text for r in echo.handled] == ["once"]


async def test_a_large_answer_is_replayed_by_its_service_not_kept_in_the_store(
    client, echo, org, stack
):
    """Redis holds every key a day, sized by keys: an answer over 16 KiB is kept there as
    answered alone, and its retry is answered by the service from what it kept."""
    headers = bearer() | {"Idempotency-Key": org}
    text = "x" * 20_000
    first = await client.post("/v1/echo", json={"text": text}, headers=headers)
    again = await client.post("/v1/echo", json={"text": text}, headers=headers)
    assert (first.status, again.status) == (201, 201)
    assert await first.read() == await again.read()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert [len(r.text) for r in echo.handled] == [20_000]  # not run again
    redis = Redis.from_url(stack.redis_url)
    try:
        (name,) = [name async for name in redis.scan_iter(f"tether:idem:*:{org}")]
        assert len(await redis.get(name)) < 200
    finally:
        await redis.aclose()


async def test_an_idempotency_key_reused_for_another_request_is_refused(client, echo, org):
    headers = bearer() | {"Idempotency-Key": org}
    await client.post("/v1/echo", json={"text": "one"}, headers=headers)
    other = await client.post("/v1/echo", json={"text": "two"}, headers=headers)
    problem = await other.json(content_type=None)
    assert (other.status, problem["type"]) == (422, "urn:tether:problem:idempotency-key-reused")
    assert [r.text for r in echo.handled] == ["one"]


async def test_the_openapi_document_says_what_holds_for_every_operation(client):
    """Its reader learns the token, the problem, when to ask again and the key once, where
    they start, not from every operation's parameters."""
    about = (await (await client.get("/v1/openapi.json")).json())["info"]["description"]
    for said in ("Bearer", "application/problem+json", "Retry-After", "Idempotency-Key"):
        assert said in about


async def test_an_idempotency_key_is_printable_ascii_as_the_openapi_document_says(client, echo):
    """One the document's pattern refuses is refused, before anything runs; one it admits
    runs. A key of non-ASCII letters was taken before, though the document named none."""
    document = await (await client.get("/v1/openapi.json")).json()
    [declared] = [
        p for p in document["paths"]["/v1/echo"]["post"]["parameters"]
        if p["name"] == "Idempotency-Key"
    ]  # fmt: skip
    pattern = re.compile(declared["schema"]["pattern"])
    for key in ("clé-1", "x" * 201, "tab\there"):
        assert not pattern.match(key)
        refused = await client.post(
            "/v1/echo", json={"text": key}, headers=bearer() | {"Idempotency-Key": key}
        )
        problem = await refused.json(content_type=None)
        assert (refused.status, problem["type"]) == (
            400,
            "urn:tether:problem:idempotency-key-invalid",
        )
    assert pattern.match("order 42/retry:1")
    ran = await client.post(
        "/v1/echo", json={"text": "ok"}, headers=bearer() | {"Idempotency-Key": "order 42/retry:1"}
    )
    assert ran.status == 201
    assert [r.text for r in echo.handled] == ["ok"]
    replayed = document["paths"]["/v1/echo"]["post"]["responses"]["201"]["headers"]
    assert "Idempotent-Replayed" in replayed and "X-Request-Id" in replayed


async def test_idempotency_keys_belong_to_their_principal(client, echo, org):
    key = {"Idempotency-Key": org}
    await client.post("/v1/echo", json={"text": "x"}, headers=bearer() | key)
    bob = bearer(token(user="acme/bob")) | key
    theirs = await client.post("/v1/echo", json={"text": "x"}, headers=bob)
    assert "Idempotent-Replayed" not in theirs.headers
    assert len(echo.handled) == 2


async def test_a_concurrent_retry_waits_its_turn(client, echo, org):
    headers = bearer() | {"Idempotency-Key": org}
    slow = {"text": "slow", "delay_ms": 1000}
    first, second = await asyncio.gather(
        client.post("/v1/echo", json=slow, headers=headers),
        client.post("/v1/echo", json=slow, headers=headers),
    )
    assert sorted((first.status, second.status)) == [201, 409]
    waiting = first if first.status == 409 else second
    assert await problem(waiting) == (409, "idempotency-key-in-use")
    assert waiting.headers["Retry-After"] == "1"  # the first's answer may come any moment
    assert len(echo.handled) == 1


async def test_the_rate_limit_is_per_principal(client_for, gateway_settings, echo, org):
    import msgspec

    client = await client_for(
        msgspec.structs.replace(gateway_settings, rate_limit=3), services=(), routes=ROUTES
    )
    mine = bearer(token(org=org, user=f"{org}/ada"))
    while time.time() % 60 > 55:  # noqa: ASYNC110 (a clock minute: start well inside one)
        await asyncio.sleep(0.5)
    answers = [await client.get("/v1/echo/x", headers=mine) for _ in range(4)]
    theirs = await client.get("/v1/echo/x", headers=bearer(token(org=org, user=f"{org}/bob")))
    assert ([a.status for a in answers], theirs.status) == ([200, 200, 200, 429], 200)
    # Asked again after Retry-After, the request is counted in the next minute.
    left = 60 - time.time() % 60  # a little less than when it was answered, on a busy machine
    assert 0 <= int(answers[-1].headers["Retry-After"]) - left <= 3
    assert "Retry-After" not in answers[0].headers
    # Each answer says what the rate leaves, so a client paces itself before a 429.
    assert {a.headers["RateLimit-Policy"] for a in answers} == {'"per-caller";q=3;w=60'}
    said = [re.fullmatch(r'"per-caller";r=(\d+);t=(\d+)', a.headers["RateLimit"]) for a in answers]
    assert [int(m[1]) for m in said] == [2, 1, 0, 0]
    # Each says when the minute ends, the 429 as its Retry-After does.
    until = [int(m[2]) for m in said]
    assert until == sorted(until, reverse=True)
    assert str(until[-1]) == answers[-1].headers["Retry-After"]


async def test_readyz_asks_every_service_over_the_bus(client_for, gateway_settings, echo):
    from tests.support import ECHO, OTHER

    ready = await client_for(gateway_settings, services=(ECHO,), routes=ROUTES)
    missing = await client_for(gateway_settings, services=(ECHO, OTHER), routes=ROUTES)
    up = await ready.get("/readyz")
    down = await missing.get("/readyz")
    assert (up.status, (await up.json())["services"]["echo"]["ok"]) == (200, True)
    body = await down.json()
    assert (down.status, body["ready"], body["services"]["other"]["ok"]) == (503, False, False)
    # The gateway itself serves with a service down: its probe is apart, so one service's
    # outage does not take every gateway out of its load balancer.
    itself = await missing.get("/readyz/gateway")
    assert (itself.status, await itself.json()) == (200, {"ready": True, "bus": True})


async def test_the_openapi_document_is_valid_and_generated_from_the_routes(client):
    response = await client.get("/v1/openapi.json")
    document = await response.json()
    validate(document)
    assert document["openapi"] == "3.1.0"
    post = document["paths"]["/v1/echo"]["post"]
    assert post["x-subject"] == "tether.echo.say"
    assert post["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Say"
    }
    assert {"Say", "Said", "Problem", "Principal"} <= document["components"]["schemas"].keys()
    # Every operation takes a request's id and names it in every answer.
    assert "X-Request-Id" in [p["name"] for p in post["parameters"] if p["in"] == "header"]
    assert all("X-Request-Id" in r["headers"] for r in post["responses"].values())


async def test_metrics_count_requests_by_route_on_a_port_of_their_own(client):
    await client.get("/v1/echo/x", headers=bearer())
    metrics = await gateway_metrics(client)
    assert (
        'tether_http_requests_total{method="GET",route="/v1/echo/{text}",status="200"}' in metrics
    )
    # Not on the API's port, which the internet reaches.
    assert (await client.get("/metrics")).status == 404


async def test_readyz_for_one_service_asks_only_that_one(client_for, gateway_settings, echo):
    from tests.support import ECHO, OTHER

    client = await client_for(gateway_settings, services=(ECHO, OTHER), routes=ROUTES)
    echo_ready = await client.get("/readyz/echo")
    other_ready = await client.get("/readyz/other")
    unknown = await client.get("/readyz/nobody")
    assert (echo_ready.status, list((await echo_ready.json())["services"])) == (200, ["echo"])
    assert (other_ready.status, unknown.status) == (503, 404)


async def test_a_keyed_write_that_times_out_never_runs_twice(
    client_for, gateway_settings, echo, org
):
    """Issue 10.11: the service is slowed past the gateway's timeout. The client gets 504;
    a retry meanwhile is asked of the service again, which holds it behind the first (504
    again, the first still running), never runs it twice; once the late reply comes, a
    retry gets it replayed. The service handled the write once."""
    import msgspec

    slow_gateway = msgspec.structs.replace(gateway_settings, request_timeout=0.2)
    client = await client_for(slow_gateway, services=(ECHO,), routes=ROUTES)
    headers = bearer() | {"Idempotency-Key": org}
    body = {"text": "pay once", "delay_ms": 800}
    first = await client.post("/v1/echo", json=body, headers=headers)
    meanwhile = await client.post("/v1/echo", json=body, headers=headers)
    assert (first.status, meanwhile.status) == (504, 504)

    async def replayed():
        again = await client.post("/v1/echo", json=body, headers=headers)
        return again if again.status == 201 else None

    again = await eventually(replayed)
    assert again is not None and again.headers["Idempotent-Replayed"] == "true"
    assert (await again.json())["text"] == "pay once"
    assert [s.text for s in echo.handled] == ["pay once"]


async def test_a_key_in_flight_is_held_while_its_gateway_waits_and_let_go_when_it_dies(stack, org):
    """A key in flight is a lease its gateway renews while it waits for the service: held
    however long the service takes (a retry meanwhile is told 409); claimed by a gateway
    killed mid-request, never renewed, it is let go within the lease, and a retry reaches
    the service again, which runs a key once. Before, a killed gateway's key answered 409
    for both timeouts and 10 s (75 s), through every other gateway."""
    redis = Redis.from_url(stack.redis_url)
    ada = Principal(org=org, sub=f"{org}/ada")
    started, done = asyncio.Event(), asyncio.Event()

    async def slow() -> Stored:
        started.set()  # its key claimed
        await done.wait()
        return Stored("", 201, b"{}", "application/json")

    try:
        # Renewed each second: a busy machine's loop may be late by most of one.
        keys = IdempotencyKeys(redis, lease_s=3)
        running = asyncio.create_task(keys.once(ada, "slow", "f", slow))
        await started.wait()
        start = time.monotonic()

        async def held_past_two_leases() -> bool:
            with pytest.raises(Refused, match="in progress"):
                await keys.claim(ada, "slow", "f")
            return time.monotonic() - start > 6

        assert await eventually(held_past_two_leases)
        done.set()
        assert (await running)[0].status == 201

        killed = IdempotencyKeys(redis)  # a gateway's default lease
        assert await killed.claim(ada, "killed", "f") is None  # and then it dies

        async def runs_again() -> bool:
            try:
                return await killed.claim(ada, "killed", "f") is None
            except Refused:
                return False

        assert await eventually(runs_again, timeout=15)
    finally:
        await redis.aclose()


async def test_a_key_whose_reply_never_came_is_asked_of_its_service_again(stack, org):
    """No reply came, even late (lost as the service's connection broke as it answered,
    which the server then refuses to carry): the outcome is unknown to the gateway, and a
    retry is asked of the service again at once, which makes what a key makes once and
    answers as it did. Before, the retry was told 409 until the key's time in flight ran
    out, a minute and more after the service had answered."""
    redis = Redis.from_url(stack.redis_url)
    keys = IdempotencyKeys(redis)
    ada = Principal(org=org, sub=f"{org}/ada")
    lost: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()

    async def run() -> Stored:
        raise Late(Stored("", 504), lost)

    async def answered() -> Stored:
        return Stored("", 201, b'{"made": 1}', "application/json")

    try:
        answer, _ = await keys.once(ada, "lost-reply", "f", run)
        lost.set_exception(Refused("service-timeout", 504, "no reply, even late"))
        assert answer.status == 504
        retried, replayed = await keys.once(ada, "lost-reply", "f", answered)
        assert (retried.status, retried.body, replayed) == (201, b'{"made": 1}', True)
        kept = await keys.claim(ada, "lost-reply", "f")
        assert kept is not None and (kept.status, kept.body) == (201, b'{"made": 1}')
    finally:
        await redis.aclose()
