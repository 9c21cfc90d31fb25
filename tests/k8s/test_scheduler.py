"""kube-scheduler 1.36 binds pods to emulated nodes: the plain one, and the shipped
``eams-scheduler`` configuration running as the shipped service account."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import free_port
from tests.servers.kube_control_plane import SCHEDULER_USER, ControlPlane, eventually
from tests.servers.kube_node import remove_taint
from tests.servers.kube_scheduler import SHIPPED_CONFIG, plain_config, shipped_config

pytestmark = pytest.mark.integration  # a real kube-apiserver and etcd


def leaves(tree: Any, path: str = "") -> dict[str, Any]:
    """Every scalar of a YAML tree by its path (``extenders[0].urlPrefix``)."""
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in leaves(sub, f"{path}.{key}").items()}
    if isinstance(tree, list):
        return {k: v for i, sub in enumerate(tree) for k, v in leaves(sub, f"{path}[{i}]").items()}
    return {path.lstrip("."): tree}


def test_the_shipped_configuration_changes_only_its_addresses(tmp_path: Path) -> None:
    shipped = yaml.safe_load(
        yaml.safe_load(SHIPPED_CONFIG.read_text())["data"]["scheduler-config.yaml"]
    )
    changed = shipped_config(tmp_path / "kubeconfig", "http://127.0.0.1:1234")
    before, after = leaves(shipped), leaves(changed)
    differing = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert differing == {"clientConnection.kubeconfig", "extenders[0].urlPrefix"}
    assert after["clientConnection.kubeconfig"] == str(tmp_path / "kubeconfig")
    assert after["extenders[0].urlPrefix"] == "http://127.0.0.1:1234"
    assert [p["schedulerName"] for p in changed["profiles"]] == ["eams-scheduler"]


def create_pod(admin: httpx.Client, name: str, scheduler: str) -> str:
    """Create a one-container pod in ``default`` for ``scheduler``; returns its path."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }
    admin.post("/api/v1/namespaces/default/pods", json=pod).raise_for_status()
    return f"/api/v1/namespaces/default/pods/{name}"


def bound_node(admin: httpx.Client, path: str) -> str | None:
    """The node the pod at ``path`` is bound to, or None while it is unbound."""
    return admin.get(path).json()["spec"].get("nodeName")


def test_a_plain_kube_scheduler_binds_a_pod_to_the_ready_node(
    control_plane: ControlPlane, emulated_nodes, kube_scheduler
) -> None:
    ready = emulated_nodes("sched-ready")
    emulated_nodes("sched-not-ready")  # keeps admission's not-ready taint: not a candidate
    with control_plane.client() as admin:
        remove_taint(admin, ready.name)
        scheduler = kube_scheduler(plain_config(control_plane.kubeconfig(SCHEDULER_USER)))
        path = create_pod(admin, "plain-pod", "default-scheduler")
        try:
            assert eventually(lambda: bound_node(admin, path), 60, "bound") == "sched-ready"
        finally:
            admin.delete(path, params={"gracePeriodSeconds": 0})
    assert "forbidden" not in scheduler.log()


def test_the_shipped_scheduler_binds_as_its_service_account(
    control_plane: ControlPlane, emulated_nodes, kube_scheduler
) -> None:
    ready = emulated_nodes("eams-ready")
    emulated_nodes("eams-not-ready")
    # nothing listens there: the shipped extender is ignorable, so placement falls back
    config = shipped_config(control_plane.kubeconfig("kube-system/eams-scheduler"),
                            f"http://127.0.0.1:{free_port()}")  # fmt: skip
    with control_plane.client() as admin:
        remove_taint(admin, ready.name)
        scheduler = kube_scheduler(config, "eams-scheduler")
        path = create_pod(admin, "eams-pod", "eams-scheduler")
        default_path = create_pod(admin, "default-pod", "default-scheduler")
        try:
            assert eventually(lambda: bound_node(admin, path), 60, "bound") == "eams-ready"
            assert bound_node(admin, default_path) is None  # not its profile's pod
        finally:
            admin.delete(path, params={"gracePeriodSeconds": 0})
            admin.delete(default_path, params={"gracePeriodSeconds": 0})
    log = scheduler.log()
    assert "forbidden" not in log  # the shipped RBAC covers what kube-scheduler 1.36 reads
    assert "Disabling signatures for profile because it has extenders configured" in log
