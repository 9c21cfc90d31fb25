"""One ranking: the nodes the power policy keeps awake are the ones the market's bids prefer
(both from :meth:`eams.calibrate.energy.EnergyModel.work_per_joule`, on one model: the line
above each node's measured sleep floor, here :data:`tests.power.conftest.NODE`'s 1 W)."""

from __future__ import annotations

import numpy as np

from eams.scheduler.auction.bids import bid_values
from eams.scheduler.auction.model import AuctionParams, Nodes, Pods
from eams.scheduler.power.policy import PolicyConfig, PowerPolicy
from tests.power.conftest import NODE, fleet, node

# "frugal" idles at 20 W with a steep line; "flat" idles at 90 W with a shallow one. At full
# load flat does more work per joule (4/150 vs 4/200), but a 1-core pod costs it far more
# (15 W dynamic + 90 W to keep it awake, vs 45 + 20); "middle" idles at 30 W measured.
FLEET = {
    "frugal": {"p_idle_w": 20.0, "p_max_w": 200.0},
    "flat": {"p_idle_w": 90.0, "p_max_w": 150.0},
    "middle": {"p_idle_w": 40.0, "p_max_w": 160.0, "p_wake_w": 30.0},
}


def _market_order(pod_cores: float) -> list[str]:
    """The nodes by the extender's bid for one pod of ``pod_cores`` cores, every node empty."""
    names = list(FLEET)
    n = len(names)
    nodes = Nodes(
        slots=np.full(n, 4),
        cores=np.full(n, 4.0),
        p_idle_w=np.array([FLEET[k]["p_idle_w"] for k in names]),
        p_max_w=np.array([FLEET[k]["p_max_w"] for k in names]),
        speed=np.ones(n),
        headroom=np.full(n, 0.5),
        age_s=np.zeros(n),
        empty=np.ones(n, dtype=bool),
        p_wake_w=np.array([FLEET[k].get("p_wake_w", FLEET[k]["p_idle_w"]) for k in names]),
        p_sleep_w=np.full(n, NODE["sleep_power_w"]),
    )
    pods = Pods(
        slots=np.array([int(pod_cores)]),
        work_core_s=np.array([3600.0]),
        priority=np.ones(1),
        tenant=np.zeros(1, dtype=int),
    )
    values = bid_values(pods, nodes, AuctionParams())[0]
    return [names[i] for i in np.argsort(-values, kind="stable")]


def test_the_nodes_kept_awake_are_the_ones_the_market_prefers() -> None:
    market = _market_order(1.0)
    assert market == ["middle", "frugal", "flat"]
    full_load = sorted(FLEET, key=lambda k: -4.0 / FLEET[k]["p_max_w"])  # C·s / P_max
    assert full_load[0] == "flat"  # the old ranking kept the node the market likes least
    for keep in (1, 2):
        nodes = [node("busy", pods=(4.0,), roles=frozenset({"k3s-server"}))]
        nodes += [node(name, **figures) for name, figures in FLEET.items()]
        reserve = PolicyConfig(reserve_cores=1.0, min_awake=1 + keep)
        plan = PowerPolicy(reserve).decide(fleet(1000.0, nodes))
        slept = {d.node for d in plan.decisions if d.action.value == "sleep"}
        assert set(FLEET) - slept == set(market[:keep])
