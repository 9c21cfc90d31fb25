"""The floor taint counts only the herding reservations of bound pods (``floor.py``,
``taints.py``): a batch's own pods, still waiting for their cycles, do not taint their node."""

from __future__ import annotations

import copy

from eams.scheduler.extender.floor import HeadroomFloor
from eams.scheduler.extender.herding import HerdGuard
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.table import NodeTable
from eams.scheduler.extender.taints import TaintKeeper, TaintPatch
from eams.telemetry import TelemetrySample
from tests.extender.conftest import node_object, sample

NOW_S = 1_800_000_000.0
FLOOR, MARGIN = 0.3, 0.05
POD_W = 40.0  # each pod's reservation: 40 W of a 200 W cap, 0.2 of headroom


class _Cluster:
    """A real table, herding guard, floor and taint keeper over nodes with given headrooms;
    patches are answered as the API server would (the node comes back with the new taints)."""

    def __init__(self, headroom: dict[str, float]) -> None:
        self.table = NodeTable()
        self.nodes = NodeCache(self.table)
        self.nodes.learn([node_object(n) for n in headroom], "items")
        for name, h in headroom.items():
            self.measure(name, h)
        self.herd = HerdGuard(settle_s=10.0, ttl_s=120.0, table=self.table)
        self.floor = HeadroomFloor(self.table, self.herd, FLOOR, MARGIN, stale_after_s=15.0)
        self.keeper = TaintKeeper(self.floor, self.nodes, lambda: NOW_S)

    def measure(self, name: str, headroom: float, at_s: float = NOW_S - 1.0) -> None:
        self.table.set_sample(TelemetrySample.from_json(sample(name, at_s, headroom)))

    def plan(self) -> list[tuple[str, str]]:
        """One plan, its patches applied; ``(node, action)`` of each."""
        patches = self.keeper.plan()
        for patch in patches:
            self.keeper.answered(patch, self._patched(patch))
        return sorted((p.node, p.action) for p in patches)

    def _patched(self, patch: TaintPatch) -> dict:
        node = copy.deepcopy(self.nodes.node(patch.node))
        assert node is not None
        node["spec"]["taints"] = patch.body["spec"]["taints"]
        return node


def test_a_batch_does_not_taint_its_own_node_until_its_pods_are_bound() -> None:
    cluster = _Cluster({"node-x": 0.6, "node-hot": 0.1, "node-ok": 0.6})
    floor, herd = cluster.floor, cluster.herd
    for pod in ("ns/p1", "ns/p2", "ns/p3"):  # one batch, cleared onto node-x
        herd.reserve("node-x", pod, POD_W, NOW_S)
    # Every reservation counts for /filter and later clearings: 0.6 − 3 × 0.2 < 0.3.
    assert floor.below(NOW_S) == {"node-x", "node-hot"}
    # The taint counts none of them while the pods wait for their cycles; node-hot, under
    # the floor from telemetry alone, is tainted as before.
    assert floor.to_taint(NOW_S) == {"node-hot"}
    assert not floor.under(["node-x"], NOW_S) and floor.under(["node-hot"], NOW_S)
    assert cluster.plan() == [("node-hot", "add")]
    assert cluster.nodes.tainted == {"node-hot"}
    # p1 is bound: 0.6 − 0.2 = 0.4, at floor + margin or above: still no taint.
    assert herd.bind("ns/p1") == "node-x"
    assert herd.bind("ns/p1") is None  # once
    assert not floor.under(["node-x"], NOW_S) and cluster.plan() == []
    # p2 is bound as well: 0.6 − 0.4 = 0.2 < 0.3, the node is tainted now.
    assert herd.bind("ns/p2") == "node-x"
    assert floor.under(["node-x"], NOW_S)
    assert floor.to_taint(NOW_S) == {"node-x", "node-hot"}
    assert cluster.plan() == [("node-x", "add")]
    assert cluster.nodes.tainted == {"node-x", "node-hot"}
    # The requests' set did not change with the bindings (it counted them all along).
    assert floor.below(NOW_S) == {"node-x", "node-hot"}


def test_a_bound_reservation_ending_is_a_new_taint_decision() -> None:
    cluster = _Cluster({"node-x": 0.45})
    herd, floor = cluster.herd, cluster.floor
    herd.reserve("node-x", "ns/p", POD_W, NOW_S)
    herd.bind("ns/p")
    assert cluster.plan() == [("node-x", "add")]  # 0.45 − 0.2 = 0.25 < 0.3
    # Its TTL passes (a fresh reading goes to the table only, so none reflects it): the
    # reservation ends, 0.45 ≥ 0.35.
    later_s = NOW_S + 121.0
    cluster.keeper.clock = lambda: later_s
    cluster.measure("node-x", 0.45, later_s - 1.0)
    assert floor.to_taint(later_s) == frozenset() and "node-x" in floor.recovered(later_s)
    assert cluster.plan() == [("node-x", "remove")]


def test_recovered_counts_the_same_reservations_as_the_taint() -> None:
    # node-x was tainted (telemetry alone), its reading is back at 0.45 ≥ floor + margin, and a
    # new batch reserved 0.2 on it that its pods, still pending, hold: the taint comes off
    # (those pods' cycles must not find it), and stays off until they are bound — no flap.
    cluster = _Cluster({"node-x": 0.2})
    assert cluster.plan() == [("node-x", "add")]
    cluster.measure("node-x", 0.45)
    cluster.herd.reserve("node-x", "ns/p", POD_W, NOW_S)
    assert cluster.floor.below(NOW_S) == {"node-x"}  # 0.25 for every other pod's /filter
    assert cluster.plan() == [("node-x", "remove")]
    assert cluster.plan() == [] and cluster.plan() == []
    assert cluster.herd.bind("ns/p") == "node-x"
    assert cluster.plan() == [("node-x", "add")]  # 0.45 − 0.2 = 0.25 < 0.3
    assert cluster.plan() == []
