"""The node view from the Kubernetes API and the safety rules, against a real HTTP server on
loopback serving the published Node and PodList documents of a live cluster (no API server
can run here: the wire format is what is tested) through the real kubernetes client."""

from __future__ import annotations

from pathlib import Path

import pytest

from eams.actuators.errors import ClusterUnreachable, PowerRefused
from eams.actuators.inventory import NodeEntry
from eams.actuators.safety import check_sleep
from eams.kube.errors import KubeConfigError
from eams.kube.nodeview import Cluster
from tests.actuators.conftest import drained
from tests.servers.kubeapi import kube_api, write_kubeconfig

ENTRY = NodeEntry(method="wol", mac="02:ea:a5:00:00:01", ssh="root@127.0.0.1")


def test_the_node_view_reads_cordon_taints_ready_and_pods(k8s) -> None:
    node, pods = k8s
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api:
        view = Cluster(api.kubeconfig).node("duckboat-01")
    assert "/api/v1/pods?fieldSelector=spec.nodeName%3Dduckboat-01" in api.requests
    assert view.name == "duckboat-01" and view.ready is True
    assert view.taints == ("type=hound:NoSchedule",) and view.tainted
    assert view.unschedulable is False
    assert len(view.pods) == 11
    assert sorted(p.name.split("-")[0] for p in view.workload_pods) == [
        "controller", "grafana", "kuard", "nginx", "nginx", "phpmyadmin",
    ]  # fmt: skip


def test_a_node_with_pods_is_refused_naming_what_is_missing(k8s) -> None:
    node, pods = k8s
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api:
        cluster = Cluster(api.kubeconfig)
        with pytest.raises(PowerRefused) as caught:
            check_sleep("duckboat-01", ENTRY, cluster.node)
        notes = check_sleep("duckboat-01", ENTRY, cluster.node, force=True)
    message = str(caught.value)
    assert caught.value.forceable
    assert "not cordoned (spec.unschedulable)" in message
    assert "not tainted" not in message  # its NoSchedule taint counts
    assert "runs 6 pod(s) not owned by a DaemonSet (nginx/nginx-ingress-default-backend" in message
    assert "and 1 more" in message and "kubectl drain duckboat-01" in message
    assert message.endswith("or --force")
    assert notes == [f"--force: {message.split(' is ', 1)[1].split(': cordon')[0]}"]


def test_a_cordoned_tainted_drained_node_may_sleep(k8s) -> None:
    node, pods = drained(*k8s)
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api:
        assert check_sleep("duckboat-01", ENTRY, Cluster(api.kubeconfig).node) == []


def test_an_untainted_node_is_refused_even_when_empty(k8s) -> None:
    node, pods = drained(*k8s)
    node["spec"].pop("taints")
    refused = pytest.raises(PowerRefused, match=r"is not tainted \(no NoSchedule or NoExecute")
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api, refused:
        check_sleep("duckboat-01", ENTRY, Cluster(api.kubeconfig).node)


def test_finished_and_mirror_pods_do_not_count(k8s) -> None:
    node, pods = drained(*k8s)
    done, mirror = (dict(pods["items"][0]) for _ in range(2))
    done = {**done, "metadata": {"name": "job-x", "namespace": "ci", "ownerReferences": [
        {"kind": "Job", "controller": True}]}, "status": {"phase": "Succeeded"}}  # fmt: skip
    mirror = {**mirror, "metadata": {"name": "etcd-n", "namespace": "kube-system",
              "annotations": {"kubernetes.io/config.mirror": "abc"}}}  # fmt: skip
    pods = {**pods, "items": [*pods["items"], done, mirror]}
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api:
        assert check_sleep("duckboat-01", ENTRY, Cluster(api.kubeconfig).node) == []


def test_an_unreachable_api_is_refused_unless_forced(tmp_path: Path, tcp_port: int) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{tcp_port}")
    cluster = Cluster(kubeconfig, timeout_s=2.0)
    with pytest.raises(ClusterUnreachable) as caught:
        check_sleep("duckboat-01", ENTRY, cluster.node)
    message = str(caught.value)
    assert f"127.0.0.1:{tcp_port}" in message and "did not answer node duckboat-01" in message
    assert "refused (--force overrides)" in message and "\n" not in message
    notes = check_sleep("duckboat-01", ENTRY, cluster.node, force=True)
    assert notes[0].startswith("--force: pods not checked")


def test_a_node_the_api_does_not_know_is_refused(k8s) -> None:
    node, pods = k8s
    refused = pytest.raises(ClusterUnreachable, match=r"refused node mini9: 404")
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api, refused:
        check_sleep("mini9", ENTRY, Cluster(api.kubeconfig).node)


def test_no_kubeconfig_at_all_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=r"no Kubernetes API configured"):
        Cluster(tmp_path / "absent")


def test_a_kubeconfig_that_is_not_yaml_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{\n")  # an unterminated flow mapping, as a truncated copy leaves it
    with pytest.raises(KubeConfigError, match=r"no Kubernetes API configured \(.*kubeconfig\)"):
        Cluster(kubeconfig)


@pytest.mark.parametrize("role", ["k3s_server", "pdu_owner"])
def test_the_server_and_the_pdu_owner_never_sleep_even_forced(k8s, role: str) -> None:
    node, pods = drained(*k8s)
    entry = ENTRY.model_copy(update={role: True})
    refused = pytest.raises(PowerRefused)
    with kube_api({"duckboat-01": node}, {"duckboat-01": pods}) as api, refused as caught:
        check_sleep("duckboat-01", entry, Cluster(api.kubeconfig).node, force=True)
    assert not caught.value.forceable
    assert "never suspended or switched off" in str(caught.value)
    assert api.requests == []  # refused before the API was asked
