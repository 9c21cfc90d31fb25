"""The shipped k3s manifests: well-formed, fields the upstream types know, values that fit.

No API server runs here, so the typed objects are checked by a lossless round trip through the
kubernetes Python client's models (generated from the upstream OpenAPI), the scheduler file
against the field names of kube-scheduler ``config/v1/types.go`` (reference §3.1), and the
whole folder with ``kubectl kustomize`` where kubectl is installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient

from eams.kube.names import MARKET_GATE, MARKET_LEASE
from eams.scheduler.extender.cli import fallback, serve
from eams.scheduler.extender.settings import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k3s"
ACTIVE = DEPLOY.parent / "k3s-active"  # the overlay: active mode, every pod gated

# kube-scheduler config/v1/types.go field names (JSON tags), as listed in reference §3.1.
CONFIG_KEYS = {
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
}
LEADER_KEYS = {
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
}
PROFILE_KEYS = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
EXTENSION_POINTS = {
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
}
EXTENDER_KEYS = {
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}
# Default Score plugins and weights per supported kube-scheduler version (reference §2.4,
# DEFAULTS default_plugins.go; v1.36 adds DynamicResources, issue 15).
IN_TREE = json.loads((DEPLOY / "in-tree-scores.json").read_text())
TARGET_PODS_PER_S = 150  # issue 15: the rate the extender sustains on one core
REQUESTS_PER_POD = 2  # kube-scheduler's bind and its Scheduled event
MODELS = {
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Service"): "V1Service",
    ("v1", "Pod"): "V1Pod",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"): "V1MutatingAdmissionPolicy",
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding"): (
        "V1MutatingAdmissionPolicyBinding"
    ),
}


def _documents() -> list[dict[str, Any]]:
    docs = []
    for path in sorted([*DEPLOY.glob("*.yaml"), *ACTIVE.glob("*.yaml")]):
        if path.name != "kustomization.yaml":
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        d
        for d in _documents()
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(found) == 1, (kind, name)
    return found[0]


def _scheduler_config() -> dict[str, Any]:
    return yaml.safe_load(
        _one("ConfigMap", "eams-scheduler-config")["data"]["scheduler-config.yaml"]
    )


def test_every_object_round_trips_through_the_upstream_models() -> None:
    api = ApiClient()
    for doc in _documents():
        model = MODELS[(doc["apiVersion"], doc["kind"])]
        typed = api.deserialize(json.dumps(doc), model, "application/json")
        assert api.sanitize_for_serialization(typed) == doc, (
            f"{doc['kind']}: unknown or mistyped field"
        )


def _kustomize(folder: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    built = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60, check=True
    )
    return [d for d in yaml.safe_load_all(built.stdout) if d]


def _extender_mode(docs: list[dict[str, Any]]) -> str:
    (deployment,) = [d for d in docs if d["metadata"]["name"] == "eams-scheduler"
                     and d["kind"] == "Deployment"]  # fmt: skip
    (extender,) = [c for c in deployment["spec"]["template"]["spec"]["containers"]
                   if c["name"] == "extender"]  # fmt: skip
    return serve.make_context("serve", extender["command"][3:]).params["mode"]


def test_kustomize_builds_the_folder_in_shadow_mode_and_the_overlay_active_and_gated() -> None:
    shadow = _kustomize(DEPLOY)
    kinds = sorted(d["kind"] for d in shadow)
    base = [
        d
        for d in _documents()
        if d["kind"] not in ("Pod", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
    ]
    assert kinds == sorted(d["kind"] for d in base)  # fmt: skip
    assert _extender_mode(shadow) == "shadow"  # the default install only records
    active = _kustomize(ACTIVE)
    assert _extender_mode(active) == "active"
    added = sorted(d["kind"] for d in active if d not in shadow)
    assert added == ["Deployment", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"]


def test_scheduler_config_uses_only_upstream_fields() -> None:
    config = _scheduler_config()
    assert (config["apiVersion"], config["kind"]) == (
        "kubescheduler.config.k8s.io/v1",
        "KubeSchedulerConfiguration",
    )
    assert set(config) <= CONFIG_KEYS
    assert set(config["leaderElection"]) <= LEADER_KEYS
    for profile in config["profiles"]:
        assert set(profile) <= PROFILE_KEYS
        assert set(profile.get("plugins", {})) <= EXTENSION_POINTS
        for point in profile.get("plugins", {}).values():
            assert set(point) <= {"enabled", "disabled"}
    for extender in config["extenders"]:
        assert set(extender) <= EXTENDER_KEYS


def _duration_s(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", text)
    assert match, f"not a Go duration: {text}"
    return float(match[1]) * units[match[2]]


def test_extender_settings_fail_open_and_leave_the_floor_to_the_taint() -> None:
    config = _scheduler_config()
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["percentageOfNodesToScore"] == 100
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == Settings().scheduler_name
    (extender,) = config["extenders"]
    assert extender["ignorable"] is True and extender["nodeCacheCapable"] is True
    # The floor is a taint (TaintToleration enforces it): prioritize is the only call per pod
    # (market wakes, which need filterVerb, are opt-in: the second call costs the pace).
    assert "filterVerb" not in extender and extender["prioritizeVerb"] == "prioritize"
    assert Settings().taint_floor
    settings = Settings()
    timeout_s = _duration_s(extender["httpTimeout"])
    assert settings.window_ms / 1000 < timeout_s <= 5.0  # no call waits for a window
    # The API client's rate limit must not cap binds below the target rate (it did at 50).
    client = config["clientConnection"]
    assert (
        client["qps"] >= REQUESTS_PER_POD * TARGET_PODS_PER_S and client["burst"] >= client["qps"]
    )


@pytest.mark.parametrize("version", sorted(IN_TREE["versions"]))
def test_the_cleared_node_outscores_every_in_tree_total(version: str) -> None:
    """Recomputed from the config file: the cleared node (10) leads every other node (≤ 9) by
    weight × 10 points (MaxNodeScore / MaxExtenderPriority), more than the largest spread the
    enabled in-tree scores of ``version`` can make (each plugin scores 0–100, times its weight).
    """
    config = _scheduler_config()
    (profile,) = config["profiles"]
    (extender,) = config["extenders"]
    disabled = {p["name"] for p in profile["plugins"]["score"].get("disabled", [])}
    enabled = profile["plugins"]["score"].get("enabled", [])
    weights = {n: w for n, w in IN_TREE["versions"][version].items() if n not in disabled}
    weights.update({p["name"]: p.get("weight", 1) for p in enabled})
    in_tree_max = IN_TREE["max_plugin_score"] * sum(weights.values())
    lead = extender["weight"] * 10 * (10 - 9)
    assert lead > in_tree_max, f"{version}: lead {lead} ≤ in-tree maximum {in_tree_max}"


def test_the_pinned_kube_scheduler_is_a_supported_version() -> None:
    deployment = _one("Deployment", "eams-scheduler")
    (scheduler,) = [
        c
        for c in deployment["spec"]["template"]["spec"]["containers"]
        if c["name"] == "kube-scheduler"
    ]
    tag = scheduler["image"].rsplit(":", 1)[1]
    assert ".".join(tag.split(".")[:2]) in IN_TREE["versions"]


def test_deployment_wires_scheduler_and_extender_together() -> None:
    deployment = _one("Deployment", "eams-scheduler")
    pod = deployment["spec"]["template"]
    containers = {c["name"]: c for c in pod["spec"]["containers"]}
    scheduler, extender = containers["kube-scheduler"], containers["extender"]
    config_arg = next(a for a in scheduler["command"] if a.startswith("--config="))
    mount = scheduler["volumeMounts"][0]["mountPath"]
    assert config_arg == f"--config={mount}/scheduler-config.yaml"
    # The extender's command is accepted by the real CLI, and listens where urlPrefix points.
    assert extender["command"][:3] == ["eams", "extender", "serve"]
    params = serve.make_context("serve", extender["command"][3:]).params
    url_port = int(_scheduler_config()["extenders"][0]["urlPrefix"].rsplit(":", 1)[1])
    assert params["port"] == url_port == extender["ports"][0]["containerPort"]
    assert params["watch"] is True and params["host"] == "0.0.0.0"
    service = _one("Service")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    accounts = {
        d["spec"]["template"]["spec"]["serviceAccountName"]
        for d in _documents()
        if d["kind"] == "Deployment"
    }
    assert pod["spec"]["serviceAccountName"] in accounts
    for binding in (d for d in _documents() if d["kind"].endswith("RoleBinding")):
        (subject,) = binding["subjects"]
        assert subject["kind"] == "ServiceAccount" and subject["namespace"] == "kube-system"
        assert subject["name"] in accounts, binding["metadata"]["name"]
    for example in ("eams-example", "eams-gated-example"):
        assert _one("Pod", example)["spec"]["schedulerName"] == Settings().scheduler_name
    gates = _one("Pod", "eams-gated-example")["spec"]["schedulingGates"]
    assert gates == [{"name": MARKET_GATE}]  # the gate the extender releases


def test_the_fallback_watches_the_lease_the_extender_renews() -> None:
    # AR-5 for gated pods: the fallback's command is accepted by the real CLI, reads the Lease
    # the extender renews (both default to it), and may read the Lease, list and release pods
    extender = {c["name"]: c for c in _one("Deployment", "eams-scheduler")["spec"]["template"]
                ["spec"]["containers"]}["extender"]  # fmt: skip
    renewed = serve.make_context("serve", extender["command"][3:]).params["lease"]
    deployment = _one("Deployment", "eams-gate-fallback")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"][:3] == ["eams", "extender", "fallback"]
    params = fallback.make_context("fallback", container["command"][3:]).params
    assert params["lease"] == renewed == MARKET_LEASE
    assert params["metrics_port"] == container["ports"][0]["containerPort"]
    assert container["livenessProbe"]["httpGet"]["port"] == container["ports"][0]["name"]
    assert "schedulerName" not in deployment["spec"]["template"]["spec"]  # never gated itself
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert {"list", "patch"} <= _granted(account)["pods"]
    namespace, name = MARKET_LEASE.split("/")
    (role,) = [d for d in _documents() if d["kind"] == "Role"
               and d["metadata"] == {"name": account, "namespace": namespace}]  # fmt: skip
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "resourceNames": [name], "verbs": ["get"]}]  # fmt: skip


def test_the_pinned_kube_scheduler_has_the_pinned_k3s_version() -> None:
    # kube-scheduler may not be newer than kube-apiserver (version skew policy): the same release
    scheduler = {c["name"]: c for c in _one("Deployment", "eams-scheduler")["spec"]["template"]
                 ["spec"]["containers"]}["kube-scheduler"]  # fmt: skip
    k3s = yaml.safe_load((DEPLOY.parents[1] / "ansible/roles/k3s/defaults/main.yml").read_text())
    assert scheduler["image"].rsplit(":", 1)[1] == k3s["k3s_version"].split("+")[0]


def _granted(account: str) -> dict[str, set[str]]:
    """Core-group resource → verbs the ClusterRoles bound to ``account`` grant (ours only)."""
    roles = {
        b["roleRef"]["name"]
        for b in _documents()
        if b["kind"] == "ClusterRoleBinding"
        and {"kind": "ServiceAccount", "name": account, "namespace": "kube-system"} in b["subjects"]
    }
    granted: dict[str, set[str]] = {}
    for role in (d for d in _documents() if d["kind"] == "ClusterRole"):
        if role["metadata"]["name"] in roles:
            for rule in role["rules"]:
                if rule["apiGroups"] == [""]:
                    for resource in rule["resources"]:
                        granted.setdefault(resource, set()).update(rule["verbs"])
    return granted


def test_the_extender_may_do_what_its_watch_and_record_send() -> None:
    # watch.py lists and watches nodes and pods and patches a node's taints (the floor);
    # decisions.py patches a bound pod's eams.io/* annotations, on by default (--annotate)
    deployment = _one("Deployment", "eams-scheduler")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    granted = _granted(account)
    assert {"get", "list", "watch", "patch"} <= granted["nodes"]
    assert {"get", "list", "watch", "patch"} <= granted["pods"]
    assert serve.make_context("serve", ["--record", "/tmp/r"]).params["annotate"] is True
