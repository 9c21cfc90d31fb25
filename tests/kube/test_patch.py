"""Node merge patches of spec.taints: others' taints kept as read (except the controller's
mirror of a cordon the patch flips), resourceVersion carried, 409 → read again and retry."""

import pytest

from eams.kube.names import UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT
from eams.kube.patch import Patched, patch_node, taints_patch

OURS = {"key": "eams.io/asleep", "effect": "NoSchedule"}
UNREACHABLE = {"key": UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": "2026-01-01T09:00:00Z"}
CORDON = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}


def node(*taints: dict, cordoned: bool = False, version: str = "7") -> dict:
    return {
        "metadata": {"name": "a", "resourceVersion": version},
        "spec": {"unschedulable": cordoned, "taints": list(taints)},
    }


def test_adds_and_removes_ours_keeping_the_others_as_read() -> None:
    body = taints_patch(node(UNREACHABLE), add=[OURS])
    assert body == {"metadata": {"resourceVersion": "7"}, "spec": {"taints": [UNREACHABLE, OURS]}}
    assert taints_patch(node(OURS, UNREACHABLE), add=[{**OURS, "value": "x"}])["spec"][
        "taints"
    ] == [OURS, UNREACHABLE]  # already there: kept as it is
    assert taints_patch(node(OURS, UNREACHABLE), remove={OURS["key"]})["spec"]["taints"] == [
        UNREACHABLE
    ]
    assert "metadata" not in taints_patch(node(version=""), add=[OURS])


def test_the_cordon_taint_is_left_to_the_controller_only_when_the_patch_flips_the_cordon() -> None:
    cordoned = node(CORDON, OURS, cordoned=True)
    uncordon = taints_patch(cordoned, remove={OURS["key"]}, unschedulable=False)
    assert uncordon["spec"] == {"taints": [], "unschedulable": False}
    kept = taints_patch(node(CORDON, cordoned=True), add=[OURS], unschedulable=True)
    assert kept["spec"]["taints"] == [CORDON, OURS]  # a person's cordon stays, as read
    floor = taints_patch(node(CORDON, cordoned=True), add=[OURS])
    assert floor["spec"]["taints"] == [CORDON, OURS]
    annotated = taints_patch(node(), unschedulable=True, annotations={"k": None})
    assert annotated["metadata"] == {"annotations": {"k": None}, "resourceVersion": "7"}


class Conflict(Exception):
    status = 409


class Api:
    """Answers 409 to the first ``conflicts`` patches; the node's version moves each read."""

    def __init__(self, conflicts: int, status: int = 409) -> None:
        self.conflicts, self.status = conflicts, status
        self.reads, self.patches = 0, []

    def read_node(self, name: str) -> dict:
        self.reads += 1
        return node(version=str(self.reads))

    def patch_node(self, name: str, body: dict) -> dict:
        self.patches.append(body)
        if len(self.patches) <= self.conflicts:
            error = Conflict()
            error.status = self.status
            raise error
        return {"patched": body}


def test_a_conflict_reads_again_and_retries() -> None:
    api = Api(conflicts=2)
    sent = patch_node(api, "a", lambda n: taints_patch(n, add=[OURS]))
    assert sent.applied and sent.conflicts == 2 and api.reads == 3
    assert [p["metadata"]["resourceVersion"] for p in api.patches] == ["1", "2", "3"]


def test_given_the_node_and_no_retries_a_conflict_returns_the_node_read_again() -> None:
    api = Api(conflicts=1)
    sent = patch_node(api, "a", lambda n: taints_patch(n, add=[OURS]), node=node(), retries=0)
    assert sent == Patched(node(version="1"), False, 1) and len(api.patches) == 1


def test_other_refusals_are_raised() -> None:
    with pytest.raises(Conflict):
        patch_node(Api(conflicts=1, status=403), "a", lambda n: {})
