"""Bus permissions on a real nats-server: each credential is confined to its role."""

from libs.contracts.permissions import GATEWAY, permissions
from libs.contracts.registry import REPLIES_BUCKET
from libs.runtime.bus import flushed
from libs.runtime.replies import Answer, Replies, digest
from tests.support import ECHO, OTHER, TEST_SERVICES


async def _violations(connect, role: str, act) -> list[str]:
    """Run `act(nc)` as `role` and collect the permission violations the server reports.

    The server answers a denied publish or subscription with an error in order, before the
    pong of a ping that follows it, and nats-py calls `error_cb` as it reads that error: once
    the server has read all `act` wrote, every violation it caused has been seen."""
    seen: list[str] = []

    async def on_error(exc: Exception) -> None:
        seen.append(str(exc))

    async with connect(role, error_cb=on_error) as nc:
        await act(nc)
        await flushed(nc)
    return [s for s in seen if "permissions violation" in s.lower()]


async def test_a_service_credential_cannot_publish_to_another_services_subject(connect):
    async def publish(nc):
        await nc.publish("tether.other.say", b"{}")

    assert await _violations(connect, "echo", publish) == [
        'nats: permissions violation for publish to "tether.other.say"'
    ]


async def test_a_service_credential_cannot_subscribe_to_another_services_subject(connect):
    async def subscribe(nc):
        await nc.subscribe("tether.other.say", queue="other")

    violations = await _violations(connect, "echo", subscribe)
    assert violations == [
        'nats: permissions violation for subscription to "tether.other.say" using queue "other"'
    ]


async def test_the_gateway_cannot_serve_a_services_subject(connect):
    async def subscribe(nc):
        await nc.subscribe(ECHO.subjects[0].name)

    assert await _violations(connect, GATEWAY, subscribe)


async def test_a_service_cannot_read_another_roles_replies(connect):
    async def subscribe(nc):
        await nc.subscribe("_INBOX.gateway.>")

    assert await _violations(connect, "echo", subscribe)


async def test_a_service_cannot_touch_another_services_buckets(connect):
    async with connect("other") as owner:
        kv = await owner.jetstream().create_key_value(bucket="other-things")
        await kv.put("k", b"mine")

        async def touch(nc):
            await nc.publish("$JS.API.STREAM.INFO.KV_other-things", b"")
            await nc.publish("$KV.other-things.k", b"theirs")

        assert await _violations(connect, "echo", touch) == [  # nats-py lowers the case
            'nats: permissions violation for publish to "$js.api.stream.info.kv_other-things"',
            'nats: permissions violation for publish to "$kv.other-things.k"',
        ]
        assert (await kv.get("k")).value == b"mine"


async def test_a_service_reads_and_writes_only_its_own_kept_answers(connect):
    async with connect("echo") as owner:
        kv = await Replies.open(owner.jetstream(), "echo", replicas=1)
        request = digest("tether.echo.say", b"{}")
        mine = await kv.once("k1", request, _answered)
        assert (await kv.once("k1", request, _never)).body == mine.body
        stream, key = f"KV_{REPLIES_BUCKET}", f"$KV.{REPLIES_BUCKET}.echo.k1"

        async def touch(nc):
            await nc.publish(f"$JS.API.DIRECT.GET.{stream}.{key}", b"")
            await nc.publish(key, b"theirs")

        denied = (f"$JS.API.DIRECT.GET.{stream}.{key}", key)
        assert await _violations(connect, "other", touch) == [
            f'nats: permissions violation for publish to "{subject.lower()}"' for subject in denied
        ]
        assert (await kv.once("k1", request, _never)).body == mine.body


async def _answered() -> Answer:
    return Answer(b'{"said": "once"}')


async def _never() -> Answer:
    raise AssertionError("a kept answer is not made again")


async def test_the_gateway_may_call_what_the_registry_lets_it_call(connect):
    async def publish(nc):
        await nc.publish(ECHO.subjects[0].name, b"{}")
        await nc.publish(OTHER.health.name, b"{}")

    assert await _violations(connect, GATEWAY, publish) == []


def test_permissions_are_derived_from_the_registry():
    gateway = permissions(GATEWAY, TEST_SERVICES)
    echo = permissions("echo", TEST_SERVICES)
    assert "tether.echo.say" in gateway["publish"]["allow"]
    assert "tether.echo.say" not in echo["publish"]["allow"]
    assert echo["subscribe"]["allow"] == ["_INBOX.echo.>", "tether.echo.health", "tether.echo.say"]
    assert echo["allow_responses"] is True
