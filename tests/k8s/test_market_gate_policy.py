"""The active install's ``deploy/k3s-active/market-gate-policy.yaml`` on the real
kube-apiserver 1.36: a pod created for the eams-scheduler profile gets the ``eams.io/market``
scheduling gate (beside any gate of its own), a pod of another profile or one created bound
does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from eams.kube.names import MARKET_GATE
from tests.servers.kube_control_plane import ControlPlane, eventually

pytestmark = pytest.mark.integration  # a real kube-apiserver

POLICY = Path(__file__).resolve().parents[2] / "deploy" / "k3s-active" / "market-gate-policy.yaml"
PODS = "/api/v1/namespaces/default/pods"


def _pod(name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x"}], **spec},
    }


def test_pods_of_the_eams_profile_are_created_gated(control_plane: ControlPlane) -> None:
    control_plane.apply(d for d in yaml.safe_load_all(POLICY.read_text()) if d)
    with control_plane.client() as admin:

        def gates_of(pod: dict[str, Any]) -> list[str]:
            made = admin.post(PODS, json=pod)
            made.raise_for_status()
            admin.delete(f"{PODS}/{pod['metadata']['name']}", params={"gracePeriodSeconds": 0})
            return [g["name"] for g in made.json()["spec"].get("schedulingGates") or []]

        # the policy takes effect once kube-apiserver has loaded it (its informer)
        eventually(lambda: gates_of(_pod("probe", "eams-scheduler")) or None, 30, "the policy")
        assert gates_of(_pod("eams", "eams-scheduler")) == [MARKET_GATE]
        own = _pod("own-gate", "eams-scheduler", schedulingGates=[{"name": "example.com/q"}])
        assert sorted(gates_of(own)) == sorted(["example.com/q", MARKET_GATE])
        assert gates_of(_pod("other", "default-scheduler")) == []
        assert gates_of(_pod("bound", "eams-scheduler", nodeName="some-node")) == []
