"""deploy/k8s/base, made from the same contracts as the embedded system: a Deployment, a
metrics Service, a PodDisruptionBudget and a scaler per service; the NATS users and
permissions `tether up` gives its server; a ScaledObject for every durable consumer a
service reads; the network kept to what each part must reach.

`tether k8s --write deploy/k8s/base` writes it; a test fails if the committed base and
this code part ways. The overlays (`dev`, `prod`) are kustomizations over it.
"""

import json
from collections.abc import Sequence

import yaml

from libs.contracts import EXTERNAL_EVENTS, SERVICES
from libs.contracts.permissions import GATEWAY, OPERATOR, permissions
from libs.contracts.registry import ServiceContract
from libs.model import ASKING, REPLY_TIMEOUT_S

__all__ = ["base", "consumers"]

NAMESPACE = "tether"
METRICS = 9100
HTTP = 8080
UNLISTED_S = 5  # how long a stopping gateway listens on while it leaves the Service
# Every process drains on SIGTERM, answering what it holds first: a request or an event is
# seconds, but an agents replica may hold a model's reply for up to its timeout. Cut off by
# SIGKILL, that reply is asked again by another replica after the message's ack wait.
_GRACE_S = 30
_MODEL_GRACE_S = REPLY_TIMEOUT_S + 15
# The durable consumers that are not a service's EVENTS or TIMERS reader: the agents
# service's meter and the scheduler's engine.
OTHER_CONSUMERS = {"agents": [("METER", "meter")], "scheduler": [("SCHEDULER", "scheduler")]}


def consumers(services: Sequence[ServiceContract] = SERVICES) -> dict[str, list[tuple[str, str]]]:
    """Each service's durable consumers, (stream, durable): EVENTS if it reads an event,
    TIMERS if it owns timers (the scheduler fires its own from its engine), and the rest."""
    events = [e for s in services for e in s.events] + list(EXTERNAL_EVENTS)
    found: dict[str, list[tuple[str, str]]] = {}
    for s in services:
        mine = list(OTHER_CONSUMERS.get(s.name, []))
        if any(s.name in e.readers for e in events):
            mine.append(("EVENTS", s.name))
        if s.timer_targets and s.name != "scheduler":
            mine.append(("TIMERS", s.name))
        if mine:
            found[s.name] = sorted(mine)
    return found


def base(services: Sequence[ServiceContract] = SERVICES) -> dict[str, str]:
    """The base's files by name."""
    reading = consumers(services)
    parts = [deployment(GATEWAY, gateway=True), *(deployment(s.name) for s in services)]
    scaling = [hpa(GATEWAY)] + [
        scaled(s.name, reading[s.name]) if s.name in reading else hpa(s.name) for s in services
    ]
    names = [GATEWAY, *(s.name for s in services)]
    return {
        "kustomization.yaml": _yaml([_kustomization()]),
        "nats-auth.conf": nats_auth(services),
        "services.yaml": _yaml([x for p in parts for x in p]),
        "scaling.yaml": _yaml(scaling + [pdb(n) for n in names]),
        "network.yaml": _yaml(network()),
        "monitoring.yaml": _yaml([service_monitor()]),
    }


def nats_auth(services: Sequence[ServiceContract]) -> str:
    """nats-server's authorization block: a user per role with the permissions the embedded
    server gives it; each password is the role's key of the `nats-credentials` secret,
    read from the server's environment."""
    roles = [GATEWAY, OPERATOR, *(s.name for s in services)]
    users = []
    for role in sorted(roles):
        allowed = permissions(role, services)
        entry = f"    {{user: {role}, password: ${role}"
        if allowed is not None:
            entry += f", permissions: {json.dumps(allowed, sort_keys=True)}"
        users.append(entry + "}")
    lines = "\n".join(users)
    return (
        "# Written by `tether k8s` from the contracts, as `tether up` configures its server.\n"
        f"authorization {{\n  users: [\n{lines}\n  ]\n}}\n"
    )


def deployment(name: str, *, gateway: bool = False) -> list[dict]:
    """The Deployment and its metrics Service (and, for the gateway, its HTTP Service)."""
    role = "gateway" if gateway else "service"
    module = f"services.{name}.main"
    env: list[dict] = [
        {"name": "NATS_USER", "value": name},
        {"name": "NATS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "nats-credentials",
                                                                "key": name}}},
        {"name": "TETHER_REPLICA", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]  # fmt: skip
    mounts = [{"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[dict] = [{"name": "tmp", "emptyDir": {}}]
    # Every process's /metrics and probes have a port of their own; the gateway's API is
    # on another, the one the internet reaches.
    ports = [{"name": "metrics", "containerPort": METRICS}]
    if gateway:
        env.append({"name": "TETHER_JWT_KEY_FILE", "value": "/etc/tether/jwt.key"})
        mounts.append({"name": "jwt", "mountPath": "/etc/tether", "readOnly": True})
        volumes.append({"name": "jwt", "secret": {"secretName": "jwt"}})
        ports = [{"name": "http", "containerPort": HTTP}, *ports]
    if name == "rooms":
        env.append({"name": "TETHER_LINES_KEY_FILE", "value": "/etc/tether-lines/lines.key"})
        mounts.append({"name": "lines", "mountPath": "/etc/tether-lines", "readOnly": True})
        volumes.append({"name": "lines", "secret": {"secretName": "lines"}})
    probe_port = "http" if gateway else "metrics"
    container = {
        "name": name,
        "image": "tether",
        "command": ["python", "-m", module],
        "envFrom": [{"configMapRef": {"name": "tether-env"}}],
        "env": env,
        "ports": ports,
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        },
        # Every process: alive while it answers, ready while it serves (a service waiting
        # for NATS is alive; were it not, a NATS outage would restart every replica). A
        # gateway is ready while on the bus, whatever one service's state: its /readyz, all
        # of them, would take every gateway out of the Service for one service's outage.
        "readinessProbe": {
            "httpGet": {"path": "/readyz/gateway" if gateway else "/readyz", "port": probe_port},
            "periodSeconds": 5,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": probe_port},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": mounts,
    }
    if gateway:
        # Kubernetes takes a stopping pod out of the Service as it stops it; the gateway
        # listens on until every node has heard, so no connection meanwhile is refused.
        # Then SIGTERM: it finishes the requests it holds (10 s at most).
        container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(UNLISTED_S)]}}}
    labels = {"app": name, "tether/role": role}
    made = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "terminationGracePeriodSeconds": (
                            _MODEL_GRACE_S if name in ASKING else _GRACE_S
                        ),
                        "automountServiceAccountToken": False,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 10001,
                            "runAsGroup": 10001,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [container],
                        "volumes": volumes,
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{name}-metrics", "labels": labels | {"tether/metrics": "true"}},
            "spec": {
                "selector": {"app": name},
                "ports": [{"name": "metrics", "port": METRICS, "targetPort": "metrics"}],
            },
        },
    ]
    if gateway:
        made.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "selector": {"app": name},
                    "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
                },
            }
        )
    return made


def hpa(name: str) -> dict:
    """A request/reply service's load is its CPU: its replicas share a queue group."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [_cpu()],
        },
    }


def scaled(name: str, reads: list[tuple[str, str]]) -> dict:
    """A service that reads durable consumers scales on each one's lag, and on its CPU for
    the requests it also answers (KEDA makes the HPA; a second one would fight it)."""
    triggers: list[dict] = [{"type": "cpu", "metricType": "Utilization",
                             "metadata": {"value": "70"}}]  # fmt: skip
    triggers += [
        {
            "type": "nats-jetstream",
            "metadata": {
                "natsServerMonitoringEndpoint": f"nats.{NAMESPACE}.svc:8222",
                "account": "$G",
                "stream": stream,
                "consumer": durable,
                "lagThreshold": "100",
            },
        }
        for stream, durable in reads
    ]
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"name": name},
            "minReplicaCount": 2,
            "maxReplicaCount": 10,
            "triggers": triggers,
        },
    }


def pdb(name: str) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": name}}},
    }


def network() -> list[dict]:
    """Nothing reaches a pod unless a policy lets it: the gateway is the only way in from
    outside; services reach NATS alone, and are reached only by the metrics scraper."""
    scraper = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name":
                                                     "monitoring"}}}  # fmt: skip
    dns = {
        "to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }

    def app(name: str) -> dict:
        return {"matchLabels": {"app": name}}

    def pods(name: str) -> dict:
        return {"podSelector": app(name)}

    def policy(name: str, selector: dict, ingress: list, egress: list) -> dict:
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": name},
            "spec": {
                "podSelector": selector,
                "policyTypes": ["Ingress", "Egress"],
                "ingress": ingress,
                "egress": egress,
            },
        }

    def tcp(port: int | str) -> dict:
        return {"protocol": "TCP", "port": port}

    to_nats = {"to": [pods("nats")], "ports": [tcp(4222)]}
    metrics_in = {"from": [scraper], "ports": [tcp(METRICS)]}
    ours = {"matchExpressions": [
        {"key": "tether/role", "operator": "In", "values": ["service", "gateway"]}
    ]}  # fmt: skip
    keda = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}}
    nats_in = [
        {"from": [{"podSelector": ours}], "ports": [tcp(4222)]},
        {"from": [pods("nats")], "ports": [tcp(6222)]},
        # The scraper, and KEDA reading consumer lag, on the monitor port.
        {"from": [scraper, keda], "ports": [tcp(8222)]},
    ]
    return [
        policy("default-deny", {}, [], []),
        policy("services", {"matchLabels": {"tether/role": "service"}}, [metrics_in],
               [to_nats, dns]),
        policy("gateway", app("gateway"), [{"ports": [tcp(HTTP)]}, metrics_in],
               [to_nats, {"to": [pods("redis")], "ports": [tcp(6379)]}, dns]),
        policy("nats", app("nats"), nats_in, [{"to": [pods("nats")], "ports": [tcp(6222)]}, dns]),
        policy("redis", app("redis"), [{"from": [pods("gateway")], "ports": [tcp(6379)]}], []),
    ]  # fmt: skip


def service_monitor() -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "tether", "labels": {"release": "prometheus"}},
        "spec": {
            "selector": {"matchLabels": {"tether/metrics": "true"}},
            "namespaceSelector": {"matchNames": [NAMESPACE]},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s"}],
        },
    }


def _cpu() -> dict:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
    }


def _kustomization() -> dict:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": NAMESPACE,
        "labels": [{"pairs": {"app.kubernetes.io/part-of": "tether"}}],
        "resources": [
            "namespace.yaml",
            "nats.yaml",
            "redis.yaml",
            "services.yaml",
            "scaling.yaml",
            "network.yaml",
            "monitoring.yaml",
        ],
        "configMapGenerator": [
            {"name": "nats-config", "files": ["nats.conf", "nats-auth.conf"]},
            {
                "name": "tether-env",
                "literals": [
                    "NATS_URL=nats://nats-0.nats:4222,nats://nats-1.nats:4222,"
                    "nats://nats-2.nats:4222",
                    "REDIS_URL=redis://redis:6379/0",
                    "TETHER_JS_REPLICAS=3",
                    "TETHER_METRICS_HOST=0.0.0.0",
                    "TETHER_HOST=0.0.0.0",
                ],
            },
        ],
        "images": [{"name": "tether", "newName": "tether", "newTag": "latest"}],
    }


def _yaml(documents: list[dict]) -> str:
    head = "# Written by `tether k8s` from the contracts; edit libs/stack/k8s.py, not this.\n"
    return head + yaml.safe_dump_all(documents, sort_keys=False, width=100)
