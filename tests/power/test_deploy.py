"""The power manager's k3s manifests (deploy/k3s/power-manager): no API server runs here, so
the objects are checked by a lossless round trip through the kubernetes client's models
(generated from the upstream OpenAPI), the folder with ``kubectl kustomize`` where kubectl is
installed, and the container's command against ``eams power manage``'s own options."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import ApiClient

from eams.scheduler.power.cli import manage
from eams.scheduler.power.config import load_config
from tests.extender.test_deploy_manifests import MODELS

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k3s" / "power-manager"


def _documents() -> list[dict[str, Any]]:
    """Every object of the files the folder's kustomization lists."""
    listed = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    return [d for name in listed for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def _one(kind: str) -> dict[str, Any]:
    (found,) = [d for d in _documents() if d["kind"] == kind]
    return found


def test_every_object_round_trips_through_the_upstream_models() -> None:
    api = ApiClient()
    for doc in _documents():
        typed = api.deserialize(json.dumps(doc), MODELS[(doc["apiVersion"], doc["kind"])],
                                "application/json")  # fmt: skip
        assert api.sanitize_for_serialization(typed) == doc, f"{doc['kind']}: unknown field"


def test_kustomize_builds_the_folder_into_kube_system() -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY)], capture_output=True, text=True,
                         timeout=60, check=True).stdout  # fmt: skip
    built = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)}
    assert built == {(d["kind"], d["metadata"]["name"]) for d in _documents()}
    namespaced = [d for d in _documents() if not d["kind"].startswith("ClusterRole")]
    assert {d["metadata"]["namespace"] for d in namespaced} == {"kube-system"}
    listed = set(yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"])
    assert {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"} == listed


def test_the_command_parses_and_the_config_loads(tmp_path: Path) -> None:
    (container,) = _one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["command"][:3] == ["eams", "power", "manage"]
    ctx = manage.make_context("manage", container["command"][3:])
    assert ctx.params["mode"] == "shadow" and ctx.params["in_cluster"] is True
    assert ctx.params["metrics_port"] == container["ports"][0]["containerPort"]
    config = tmp_path / "config.yaml"
    config.write_text(_one("ConfigMap")["data"]["config.yaml"])
    assert load_config(config).policy.idle_before_sleep_s == 120.0
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    for option in ("inventory_path", "calibrations_dir", "record_dir"):
        assert str(ctx.params[option]) in mounts
    assert str(ctx.params["config_path"].parent) in mounts


def test_rbac_grants_what_the_manager_calls_and_no_eviction() -> None:
    rules = {
        (rule["apiGroups"][0], resource): set(rule["verbs"])
        for rule in _one("ClusterRole")["rules"]
        for resource in rule["resources"]
    }
    assert rules == {
        ("", "nodes"): {"get", "list", "watch", "patch"},
        ("", "pods"): {"get", "list", "watch"},
        ("coordination.k8s.io", "leases"): {"get", "list", "watch"},
    }
