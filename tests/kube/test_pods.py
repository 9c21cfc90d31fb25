"""The workload-pod rule and the pod model's errors."""

import pytest

from eams.kube.errors import BadObject
from eams.kube.names import MIRROR_ANNOTATION
from eams.kube.pods import parse_pod, pod_ref


def pod(owner: str | None = None, phase: str = "Running", **meta) -> dict:
    owners = [{"kind": owner, "controller": True}] if owner else []
    meta = {"name": "p", "ownerReferences": owners, **meta}
    return {"metadata": meta, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("doc", "workload"),
    [
        (pod(), True),
        (pod("ReplicaSet", "Pending"), True),
        (pod("DaemonSet"), False),
        (pod("Job", "Succeeded"), False),
        (pod("Job", "Failed"), False),
        (pod(annotations={MIRROR_ANNOTATION: "x"}), False),
    ],
)
def test_a_workload_pod_is_one_sleeping_its_node_would_stop(doc: dict, workload: bool) -> None:
    assert pod_ref(doc).is_workload is workload


def test_the_controller_is_the_owner_marked_so() -> None:
    doc = pod()
    owners = [{"kind": "Node"}, {"kind": "DaemonSet", "controller": True}]
    doc["metadata"]["ownerReferences"] = owners
    assert pod_ref(doc).owner_kind == "DaemonSet" and str(pod_ref(doc)) == "default/p"


def test_a_malformed_pod_names_the_field() -> None:
    with pytest.raises(BadObject, match=r"^ns/p: spec\.priority"):
        parse_pod({"spec": {"priority": "high"}}, "ns/p")
