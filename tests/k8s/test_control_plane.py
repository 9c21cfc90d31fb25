"""The real control plane answers, keeps an emulated node Ready, and enforces the shipped RBAC.

No controller-manager runs in this module: the not-ready taint admission adds stays until a
test removes it.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.servers.kube_control_plane import ControlPlane, eventually, shipped_service_accounts
from tests.servers.kube_node import NOT_READY, condition, remove_taint, taints

pytestmark = pytest.mark.integration  # a real kube-apiserver and etcd

MERGE = {"Content-Type": "application/merge-patch+json"}
SCHEDULER_SA = "kube-system/eams-scheduler"
POWER_MANAGER_SA = "kube-system/eams-power-manager"


def test_the_apiserver_answers_admin_over_verified_tls(control_plane: ControlPlane) -> None:
    with control_plane.client() as admin:
        assert admin.get("/version").json()["gitVersion"] == "v1.36.2"
    # kubectl with the admin kubeconfig: certificate-authority, no insecure-skip-tls-verify
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(control_plane.kubeconfig()), "get", "namespaces",
         "-o", "name"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "namespace/kube-node-lease" in done.stdout.split()


def test_every_shipped_service_account_has_an_identity(control_plane: ControlPlane) -> None:
    assert {SCHEDULER_SA, POWER_MANAGER_SA} <= set(shipped_service_accounts())
    for account in shipped_service_accounts():
        namespace, name = account.split("/")
        with control_plane.client(account) as client:
            review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
            answer = client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review)
        assert answer.status_code == 201, answer.text
        user = answer.json()["status"]["userInfo"]
        assert user["username"] == f"system:serviceaccount:{namespace}:{name}"


def test_an_emulated_node_becomes_ready_and_keeps_beating(
    control_plane: ControlPlane, emulated_nodes
) -> None:
    node = emulated_nodes("cp-ready", cpu="16", memory="64Gi", labels={"eams.io/pool": "a"},
                          period_s=1.0)  # fmt: skip
    doc = node.node()
    assert condition(doc)["status"] == "True"
    assert doc["status"]["allocatable"]["cpu"] == "16"
    assert doc["metadata"]["labels"]["eams.io/pool"] == "a"
    assert (NOT_READY, "NoSchedule") in taints(doc)  # admission's, nothing lifted it
    first_beat = condition(doc)["lastHeartbeatTime"]
    with control_plane.client() as admin:
        lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}"
        first_renewal = admin.get(lease).json()["spec"]["renewTime"]
        eventually(lambda: admin.get(lease).json()["spec"]["renewTime"] != first_renewal,
                   30, "the lease renewed")  # fmt: skip
        eventually(lambda: condition(node.node())["lastHeartbeatTime"] != first_beat,
                   30, "a fresh Ready heartbeat")  # fmt: skip
        assert remove_taint(admin, node.name)
        assert taints(node.node()) == set()
        assert not remove_taint(admin, node.name)
    assert node.errors == []


def test_a_sleeping_node_stops_beating(control_plane: ControlPlane, emulated_nodes) -> None:
    node = emulated_nodes("cp-sleeper", period_s=0.5)
    eventually(lambda: node.beats >= 2, 30, "a background beat")
    node.sleep()
    beats, ticks = node.beats, node.ticks
    heartbeat = condition(node.node())["lastHeartbeatTime"]
    # three periods (past a second boundary: the heartbeat has second precision) in silence
    eventually(lambda: node.ticks >= ticks + 3, 30, "three periods asleep")
    assert node.beats == beats
    assert condition(node.node())["lastHeartbeatTime"] == heartbeat
    node.wake()
    assert node.beats == beats + 1
    assert condition(node.node())["lastHeartbeatTime"] > heartbeat


def test_the_shipped_roles_grant_their_verbs_and_nothing_else(
    control_plane: ControlPlane, emulated_nodes
) -> None:
    emulated_nodes("cp-rbac")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "cp-rbac-pod"},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }
    with control_plane.client() as admin:
        admin.post("/api/v1/namespaces/default/pods", json=pod).raise_for_status()
    annotate = {"metadata": {"annotations": {"eams.io/test": "1"}}}
    node_path, pod_path = "/api/v1/nodes/cp-rbac", "/api/v1/namespaces/default/pods/cp-rbac-pod"
    try:
        with control_plane.client(SCHEDULER_SA) as extender:  # the extender's ClusterRole
            assert extender.get("/api/v1/nodes").status_code == 200
            assert extender.get("/api/v1/pods").status_code == 200
            assert extender.patch(node_path, json=annotate, headers=MERGE).status_code == 200
            assert extender.patch(pod_path, json=annotate, headers=MERGE).status_code == 200
            assert extender.delete(node_path).status_code == 403
            assert extender.post("/api/v1/namespaces/default/pods/cp-rbac-pod/eviction",
                                 json={}).status_code == 403  # fmt: skip
        with control_plane.client(POWER_MANAGER_SA) as manager:
            assert manager.get("/api/v1/pods").status_code == 200
            assert manager.patch(node_path, json=annotate, headers=MERGE).status_code == 200
            denied = manager.patch(pod_path, json=annotate, headers=MERGE)
            assert denied.status_code == 403  # its role reads pods, never patches them
            assert 'cannot patch resource "pods"' in denied.json()["message"]
            assert manager.delete(node_path).status_code == 403
    finally:
        with control_plane.client() as admin:
            admin.delete(pod_path, params={"gracePeriodSeconds": 0})
