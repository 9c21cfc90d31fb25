"""Effective pod requests follow component-helpers ``PodRequests`` (reference §5.1)."""

import json

import pytest

from eams.kube.errors import BadQuantity
from eams.kube.pods import PodObject
from eams.kube.requests import pod_request, pod_requests


def _pod(spec: dict) -> PodObject:
    return PodObject.model_validate({"metadata": {"name": "p"}, "spec": spec})


def _c(
    name: str, cpu: str | None = None, restart: str | None = None, limit_cpu: str | None = None
) -> dict:
    resources: dict = {}
    if cpu is not None:
        resources["requests"] = {"cpu": cpu}
    if limit_cpu is not None:
        resources["limits"] = {"cpu": limit_cpu}
    container = {"name": name, "resources": resources}
    if restart:
        container["restartPolicy"] = restart
    return container


def test_reference_worked_example_sidecar_init_overhead() -> None:
    # Reference §5.1: 200m + 300m; init A 1; sidecar S 100m (after A); init B 800m; overhead 50m.
    pod = _pod(
        {
            "containers": [_c("a", "200m"), _c("b", "300m")],
            "initContainers": [_c("A", "1"), _c("S", "100m", "Always"), _c("B", "800m")],
            "overhead": {"cpu": "50m"},
        }
    )
    assert pod_request(pod).cpu_milli == 1050


def test_sidecars_add_to_regular_when_larger_than_init_peak() -> None:
    pod = _pod(
        {"containers": [_c("a", "1")], "initContainers": [_c("S", "2", "Always"), _c("I", "500m")]}
    )
    # regular = 1 + 2 = 3; init peak = max(2, 2.5) → effective 3 cores.
    assert pod_request(pod).cpu_milli == 3000


def test_limit_only_defaults_the_request_and_pod_level_replaces() -> None:
    pod = _pod({"containers": [_c("a", limit_cpu="750m")]})
    assert pod_request(pod).cpu_milli == 750
    pod = _pod({"containers": [_c("a", "2")], "resources": {"requests": {"cpu": "1500m"}}})
    assert pod_request(pod).cpu_milli == 1500


def test_rounding_happens_once_per_pod() -> None:
    # Two containers of 0.1Gi each: the exact sum 214748364.8 rounds up once to ...365.
    memory = {"requests": {"memory": "0.1Gi"}}
    pod = _pod(
        {"containers": [{"name": "a", "resources": memory}, {"name": "b", "resources": memory}]}
    )
    assert pod_request(pod).memory_bytes == 214748365


def test_bad_quantity_names_its_path() -> None:
    pod = _pod({"containers": [_c("a", "1")], "initContainers": [_c("i", "1K")]})
    with pytest.raises(
        BadQuantity, match=r"Pod\.spec\.initContainers\[0\]\.resources\.requests\.cpu"
    ):
        pod_request(pod)


def test_real_podlist_requests(shared_data) -> None:
    pods = json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())["items"]
    by_name = {p["metadata"]["name"]: pod_requests(PodObject.model_validate(p)) for p in pods}
    speaker = pod_request(
        PodObject.model_validate(
            next(p for p in pods if p["metadata"]["name"].startswith("speaker"))
        )
    )
    assert (speaker.cpu_milli, speaker.memory_bytes) == (100, 100 * 2**20)
    calico = next(v for k, v in by_name.items() if k.startswith("calico-node"))
    assert calico == {"cpu": pytest.approx(0.25)}
    assert all(v == {} for k, v in by_name.items() if k.startswith("kuard"))
