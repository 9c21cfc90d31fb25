"""kube-scheduler's TaintToleration rule (k8s.io/api ``core/v1/toleration.go``), once."""

import pytest

from eams.kube.taints import Taint, Toleration, has_taint, node_taints, pod_tolerations, untolerated

GPU = Taint("dedicated", "gpu", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        (Toleration("dedicated", "Equal", "gpu", "NoSchedule"), True),
        (Toleration("dedicated", "Equal", "gpu"), True),  # empty effect: every effect
        (Toleration("dedicated", "Exists"), True),
        (Toleration("", "Exists"), True),  # empty key with Exists: every taint
        (Toleration("", "Exists", effect="NoExecute"), False),
        (Toleration("", "Equal", "gpu"), False),  # refused by API validation: tolerates nothing
        (Toleration("dedicated", "Equal", "cpu"), False),
        (Toleration("other", "Exists"), False),
        (Toleration("dedicated", "Exists", effect="NoExecute"), False),
        (Toleration("dedicated", "Lt", "gpu"), False),  # an unknown operator: nothing
    ],
)
def test_toleration_matching(toleration: Toleration, tolerated: bool) -> None:
    assert toleration.tolerates(GPU) is tolerated


def test_the_filter_reads_noschedule_and_noexecute_only() -> None:
    prefer = Taint("x", "", "PreferNoSchedule")
    execute = Taint("y", "", "NoExecute")
    assert untolerated((), [prefer]) is None
    assert untolerated((), [prefer, execute]) == execute
    assert untolerated((), [execute], ignore={"y"}) is None
    assert untolerated([Toleration("y", "Exists")], [GPU, execute]) == GPU


def test_json_forms() -> None:
    node = {"spec": {"taints": [{"key": "a", "effect": "NoExecute"}, "junk", {"key": "b"}]}}
    assert [Taint.from_json(t) for t in node_taints(node)] == [
        Taint("a", "", "NoExecute"),
        Taint("b", "", "NoSchedule"),
    ]
    assert has_taint(node, "b") and not has_taint(node, "c")
    assert node_taints({"spec": {"taints": None}}) == [] and node_taints({"spec": 3}) == []
    tolerations = [{"key": "a", "operator": "Exists"}, {"key": "b", "value": "1"}]
    pod = {"spec": {"tolerations": tolerations}}
    assert pod_tolerations(pod) == (Toleration("a", "Exists"), Toleration("b", "Equal", "1"))
    assert str(GPU) == "dedicated=gpu:NoSchedule" and str(Taint("k")) == "k:NoSchedule"
