"""Records from a real clearing of the ε-auction engine, shared by the record's tests."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pytest

from eams.scheduler.auction import AuctionParams, Nodes, Pods, bids, clear
from eams.scheduler.record import Placement, placement_records

NODE_NAMES = [f"mini-{i}" for i in range(1, 7)]
# mini-3 under the headroom floor, mini-4 over its cap, mini-5 stale, mini-6 without telemetry.
HEADROOM = np.array([0.50, 0.40, 0.05, -0.10, 0.60, np.nan])
AGE_S = np.array([1.0, 2.0, 3.0, 4.0, 40.0, np.nan])
FLOOR = np.array([False, False, True, False, False, False])
STALE_AFTER_S = 15.0


@dataclass(frozen=True)
class WindowPod:
    """What the extender's PendingPod offers the builder: key and uid."""

    key: str
    uid: str | None


def nodes() -> Nodes:
    n = len(NODE_NAMES)
    return Nodes(
        slots=np.full(n, 4),
        cores=np.full(n, 4.0),
        p_idle_w=np.linspace(55.0, 65.0, n),
        p_max_w=np.linspace(90.0, 140.0, n),
        speed=np.linspace(0.8, 1.3, n),
        headroom=HEADROOM,
        age_s=AGE_S,
        empty=np.zeros(n, dtype=bool),
    )


def window(
    j_pods: int = 3,
    slots: int = 1,
    mode: str = "active",
    at_s: float | None = None,
    keep_candidates: int = 5,
) -> list[Placement]:
    """The placement records of one real clearing of ``j_pods`` pods on the six nodes."""
    pods = Pods(
        slots=np.full(j_pods, slots),
        work_core_s=np.linspace(100.0, 300.0, j_pods),
        priority=np.ones(j_pods),
        tenant=np.zeros(j_pods, dtype=np.int64),
    )
    params = AuctionParams()
    node_arrays = nodes()
    feasible = np.broadcast_to(~FLOOR, (j_pods, len(NODE_NAMES))).copy()
    clearing = clear(pods, node_arrays, params, feasible)
    return placement_records(
        pods=[WindowPod(f"default/job-{j}", f"uid-{j}") for j in range(j_pods)],
        names=NODE_NAMES,
        values=bids.bid_values(pods, node_arrays, params),
        clearing=clearing,
        headroom=HEADROOM,
        age_s=AGE_S,
        mode=mode,  # type: ignore[arg-type]
        at_s=at_s if at_s is not None else time.time(),
        excluded={"headroom_floor": FLOOR},
        gate=bids.gate(node_arrays, params),
        scores=np.tile(np.arange(len(NODE_NAMES)), (j_pods, 1)),
        stale_after_s=STALE_AFTER_S,
        keep_candidates=keep_candidates,
    )


@pytest.fixture
def placements() -> list[Placement]:
    return window()
