"""The herding reservation of a cleared pod is its added power on its node (study §5.1)."""

from types import SimpleNamespace

import numpy as np

from eams.scheduler.auction import AuctionParams, Nodes, Pods
from eams.scheduler.extender.market import Market


def test_expected_power_is_dynamic_share_clipped_to_the_node_plus_wake() -> None:
    nodes = Nodes(
        slots=[4, 8],
        cores=[4.0, 8.0],
        p_idle_w=[40.0, 50.0],
        p_max_w=[120.0, 210.0],
        speed=[1.0, 1.0],
        headroom=[0.5, 0.5],
        age_s=[1.0, 1.0],
        empty=[False, True],
    )
    pods = Pods(slots=[2, 6, 1, 1], work_core_s=[60.0] * 4, priority=[1.0] * 4, tenant=[0] * 4)
    snapshot = SimpleNamespace(node_arrays=nodes, pod_arrays=pods)
    clearing = SimpleNamespace(assignment=np.array([0, 0, 1, -1]))
    market = Market(None, None, AuctionParams(), default_runtime_s=60.0)  # type: ignore[arg-type]
    expected_w = market.expected_power_w(snapshot, clearing)  # type: ignore[arg-type]
    # 80 W × 2/4; 6 cores on a 4-core node: at most the whole range; 160 W × 1/8 + 50 W idle
    assert expected_w[:3].tolist() == [40.0, 80.0, 70.0]
    assert np.isnan(expected_w[3])  # left unassigned: no reservation
