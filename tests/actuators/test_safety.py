"""The node view from the Kubernetes API and the safety rules, through the real kubernetes
client against the real API server (``tests/servers/kube_control_plane.py``; the operator's
admin kubeconfig, as ``eams power`` is run by hand) holding the reference data's Node and pods
of a live cluster, each pod in its own namespace."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from eams.actuators.errors import ClusterUnreachable, PowerRefused
from eams.actuators.inventory import NodeEntry
from eams.actuators.safety import check_sleep
from eams.kube.errors import KubeConfigError
from eams.kube.nodeview import Cluster
from tests.actuators.conftest import drained
from tests.servers.kube_control_plane import ControlPlane
from tests.servers.kube_documents import clear, load

ENTRY = NodeEntry(method="wol", mac="02:ea:a5:00:00:01", ssh="root@127.0.0.1")
NODES = ["duckboat-01", "duckboat-02"]


@pytest.fixture
def admin(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    """An admin client of the module's API server; the test's pods and nodes are deleted
    after it."""
    with control_plane.client() as client:
        yield client
        clear(client, NODES)


@pytest.fixture
def cluster(control_plane: ControlPlane) -> Cluster:
    """The node views as the operator's admin kubeconfig reads them."""
    return Cluster(control_plane.kubeconfig())


def silent_kubeconfig(plane: ControlPlane, folder: Path, port: int) -> Path:
    """The admin kubeconfig with its server moved to ``port`` on loopback, where nothing
    listens: an API server that is down."""
    config = yaml.safe_load(plane.kubeconfig().read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path = folder / "kubeconfig-down"
    path.write_text(yaml.safe_dump(config))
    return path


def test_the_node_view_reads_cordon_taints_ready_and_pods(k8s, admin, cluster) -> None:
    node, pods = k8s
    elsewhere = copy.deepcopy(pods["items"][2])  # a ReplicaSet's pod, on another node
    elsewhere["metadata"]["name"] = "nginx-ingress-default-backend-5b967cf596-zz9q1"
    elsewhere["spec"]["nodeName"] = "duckboat-02"
    other = copy.deepcopy(node)
    other["metadata"]["name"] = "duckboat-02"
    load(admin, [node, other], [*pods["items"], elsewhere])
    view = cluster.node("duckboat-01")
    assert view.name == "duckboat-01" and view.ready is True
    assert view.taints == ("type=hound:NoSchedule",) and view.tainted
    assert view.unschedulable is False
    assert len(view.pods) == 11  # its own pods only: they are read by node
    assert sorted(p.name.split("-")[0] for p in view.workload_pods) == [
        "controller", "grafana", "kuard", "nginx", "nginx", "phpmyadmin",
    ]  # fmt: skip
    assert [p.name for p in cluster.node("duckboat-02").pods] == [elsewhere["metadata"]["name"]]


def test_a_node_with_pods_is_refused_naming_what_is_missing(k8s, admin, cluster) -> None:
    node, pods = k8s
    load(admin, [node], pods["items"])
    with pytest.raises(PowerRefused) as caught:
        check_sleep("duckboat-01", ENTRY, cluster.node)
    notes = check_sleep("duckboat-01", ENTRY, cluster.node, force=True)
    message = str(caught.value)
    assert caught.value.forceable
    assert "not cordoned (spec.unschedulable)" in message
    assert "not tainted" not in message  # its NoSchedule taint counts
    # named as namespace/name, in the API server's order (namespace, then name)
    named = ("default/kuard-6b65d9d8b5-44bbs, metallb-system/controller-5c9894b5cd-r66xh, "
             "mysql/phpmyadmin-54c7cdbdc7-8qnbr, nginx/nginx-ingress-controller-86cd89648c-dkmjf, "
             "nginx/nginx-ingress-default-backend-5b967cf596-pp4m9 and 1 more")  # fmt: skip
    assert f"runs 6 pod(s) not owned by a DaemonSet ({named})" in message
    assert "kubectl drain duckboat-01" in message and message.endswith("or --force")
    assert notes == [f"--force: {message.split(' is ', 1)[1].split(': cordon')[0]}"]


def test_a_cordoned_tainted_drained_node_may_sleep(k8s, admin, cluster) -> None:
    node, pods = drained(*k8s)
    load(admin, [node], pods["items"])
    assert check_sleep("duckboat-01", ENTRY, cluster.node) == []


def test_an_untainted_node_is_refused_even_when_empty(k8s, admin, cluster) -> None:
    node, pods = drained(*k8s)
    node["spec"].pop("taints")
    load(admin, [node], pods["items"])
    assert cluster.node("duckboat-01").taints == ()  # not even admission's not-ready one
    with pytest.raises(PowerRefused, match=r"is not tainted \(no NoSchedule or NoExecute"):
        check_sleep("duckboat-01", ENTRY, cluster.node)


def test_finished_and_mirror_pods_do_not_count(k8s, admin, cluster) -> None:
    node, pods = drained(*k8s)
    base = pods["items"][0]
    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "job-x", "controller": True,
           "blockOwnerDeletion": True, "uid": "6b1c2a4e-0d6f-4f55-9a43-3f0e6c1d2b7a"}  # fmt: skip
    done = {**base, "metadata": {"name": "job-x-4kq2t", "namespace": "ci",
                                 "ownerReferences": [job]},
            "status": {"phase": "Succeeded"}}  # fmt: skip
    mirror = {**base, "metadata": {"name": "etcd-duckboat-01", "namespace": "kube-system",
              "annotations": {"kubernetes.io/config.mirror": "abc"}}}  # fmt: skip
    load(admin, [node], [*pods["items"], done, mirror])
    assert len(cluster.node("duckboat-01").pods) == 7
    assert check_sleep("duckboat-01", ENTRY, cluster.node) == []


def test_an_unreachable_api_is_refused_unless_forced(
    control_plane: ControlPlane, tmp_path: Path, tcp_port: int
) -> None:
    cluster = Cluster(silent_kubeconfig(control_plane, tmp_path, tcp_port), timeout_s=2.0)
    with pytest.raises(ClusterUnreachable) as caught:
        check_sleep("duckboat-01", ENTRY, cluster.node)
    message = str(caught.value)
    assert f"127.0.0.1:{tcp_port}" in message and "did not answer node duckboat-01" in message
    assert "refused (--force overrides)" in message and "\n" not in message
    notes = check_sleep("duckboat-01", ENTRY, cluster.node, force=True)
    assert notes[0].startswith("--force: pods not checked")


def test_a_node_the_api_does_not_know_is_refused(k8s, admin, cluster) -> None:
    node, pods = k8s
    load(admin, [node], pods["items"])
    with pytest.raises(ClusterUnreachable, match=r"refused node mini9: 404"):
        check_sleep("mini9", ENTRY, cluster.node)


def test_no_kubeconfig_at_all_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=r"no Kubernetes API configured"):
        Cluster(tmp_path / "absent")


def test_a_kubeconfig_that_is_not_yaml_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{\n")  # an unterminated flow mapping, as a truncated copy leaves it
    with pytest.raises(KubeConfigError, match=r"no Kubernetes API configured \(.*kubeconfig\)"):
        Cluster(kubeconfig)


@pytest.mark.parametrize("role", ["k3s_server", "pdu_owner"])
def test_the_server_and_the_pdu_owner_never_sleep_even_forced(
    control_plane: ControlPlane, tmp_path: Path, tcp_port: int, role: str
) -> None:
    """Refused before the API is asked: with its server down, the refusal is still the role's
    (the same node without the role is refused as unreachable)."""
    cluster = Cluster(silent_kubeconfig(control_plane, tmp_path, tcp_port), timeout_s=2.0)
    entry = ENTRY.model_copy(update={role: True})
    with pytest.raises(PowerRefused) as caught:
        check_sleep("duckboat-01", entry, cluster.node, force=True)
    assert not caught.value.forceable
    assert "never suspended or switched off" in str(caught.value)
    with pytest.raises(ClusterUnreachable, match=r"did not answer node duckboat-01"):
        check_sleep("duckboat-01", ENTRY, cluster.node)
