"""The NATS permissions of each credential, derived from the registry.

One user per service, one for the gateway, and one `operator` for the command line. Because
only these users can publish to request subjects, a service may trust the Principal header.
"""

from collections.abc import Sequence

from libs.contracts.registry import (
    ANY_SERVICE,
    REPLIES_BUCKET,
    TIMER_OWNERS,
    ServiceContract,
    Subject,
)

__all__ = ["GATEWAY", "OPERATOR", "inbox_prefix", "permissions"]

GATEWAY = "gateway"
OPERATOR = "operator"


def inbox_prefix(role: str) -> str:
    """Each credential gets inboxes of its own, so no other can read its replies."""
    return f"_INBOX.{role}"


def permissions(role: str, services: Sequence[ServiceContract]) -> dict[str, object] | None:
    """The `permissions` block for `role` in nats-server's config; None means unrestricted."""
    if role == OPERATOR:
        return None
    own = next((svc for svc in services if svc.name == role), None)
    roles = {role}
    if own is not None:
        roles.add(ANY_SERVICE)
        if own.timer_targets:
            roles.add(TIMER_OWNERS)
    callable_ = [
        s.published_by(role) for svc in services for s in _served(svc) if roles & s.callers
    ]
    subscribe = [f"{inbox_prefix(role)}.>"]
    publish = ["$JS.API.INFO", *callable_]
    if own is not None:
        subscribe += [s.served for s in _served(own)]
        publish += [
            f"tether.evt.{own.name}.>",
            f"tether.live.{own.name}.>",
            f"tether.dead.{own.name}",
            f"tether.dead.{own.name}.>",
        ]
        for spec in own.streams:
            publish += [*_owned_stream(spec.name), *spec.subjects]
        for bucket in own.buckets:
            publish += _owned_stream(f"KV_{bucket}")
        publish += [f"$KV.{bucket}.>" for bucket in own.buckets]
        for stream in own.shared_streams:
            publish += _shared_stream(stream, consumer=own.name)
        publish += _replies(own.name)
    elif role == GATEWAY:
        subscribe.append("tether.live.>")  # streamed to clients it has authorized
        for bucket in (b for svc in services for b in svc.watched):
            publish += _watched_bucket(f"KV_{bucket}")
        for bucket in (b for svc in services for b in svc.gateway_reads):
            publish.append(f"$JS.API.STREAM.MSG.GET.KV_{bucket}")
    else:
        raise ValueError(f"no service named {role!r}")
    return {
        "publish": {"allow": sorted(set(publish))},
        "subscribe": {"allow": sorted(set(subscribe))},
        "allow_responses": True,
    }


def _served(svc: ServiceContract) -> tuple[Subject, ...]:
    return (svc.health, *svc.subjects)


def _owned_stream(stream: str) -> list[str]:
    api = "$JS.API"
    return [
        f"{api}.STREAM.*.{stream}",
        f"{api}.STREAM.MSG.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}.>",
        f"{api}.CONSUMER.*.{stream}",
        f"{api}.CONSUMER.*.{stream}.>",
        f"{api}.CONSUMER.DURABLE.CREATE.{stream}.>",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.>",
        f"$JS.ACK.{stream}.>",
    ]


def _replies(service: str) -> list[str]:
    """Make the bucket of kept answers, and read and write only this service's keys."""
    api, stream = "$JS.API", f"KV_{REPLIES_BUCKET}"
    return [
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.STREAM.CREATE.{stream}",
        f"{api}.DIRECT.GET.{stream}.$KV.{REPLIES_BUCKET}.{service}.>",
        f"$KV.{REPLIES_BUCKET}.{service}.>",
    ]


def _watched_bucket(stream: str) -> list[str]:
    """Watch a bucket with ordered consumers (nats-py's `watch`), and nothing else."""
    api = "$JS.API"
    return [
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}.>",
        f"{api}.CONSUMER.DELETE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.>",
        f"$JS.FC.{stream}.>",
    ]


def _shared_stream(stream: str, *, consumer: str) -> list[str]:
    """Create or read a shared stream, and only the consumer named for this service."""
    api = "$JS.API"
    return [
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.STREAM.CREATE.{stream}",
        f"{api}.STREAM.MSG.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}.>",
        f"{api}.CONSUMER.CREATE.{stream}.{consumer}",
        f"{api}.CONSUMER.CREATE.{stream}.{consumer}.>",
        f"{api}.CONSUMER.DURABLE.CREATE.{stream}.{consumer}",
        f"{api}.CONSUMER.INFO.{stream}.{consumer}",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    ]
