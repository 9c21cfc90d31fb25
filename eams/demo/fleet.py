"""The demo's six virtual nodes: hidden power curves from six real SPECpower servers.

Six single-node SPECpower_ssj2008 results are taken at evenly spaced positions of the usable
results (the benchmark harness's filter, :func:`eams.scheduler.bench.cluster.read_server_models`)
so that they span vendors and hardware generations. Each node keeps its server's measured curve
*shape* (active idle, 10 % … 100 % target load), multiplied by one factor per node, and its
server's per-core throughput as its speed (relative to the median of the six). Every node has
:data:`CORES` cores.

Why the nodes are not scaled down to true mini-PC power (10–60 W): the simulated PDU is an APC
rPDU2, and like the real one (Schneider FAQ FA156074) it cannot meter an outlet under 50 W —
the driver flags such readings ``below_floor`` and the sweep and the agent rightly refuse
them. So each curve is scaled to idle at :data:`IDLE_W` (55–65 W): the smallest scale at which
every reading is metered. A real mini-PC testbed needs a meter without that floor (Raritan PX,
an Eastron SDM per node). Without the data folder the demo names the file it wanted and uses
:data:`BUILTIN`, six curves of the same kind written down here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eams.datasets import data_file, not_found
from eams.scheduler.bench.cluster import SPECPOWER_CSV, read_server_models
from eams.scheduler.bench.errors import ClusterError
from eams.scheduler.bench.manifest import ClusterSpec

CORES = 4
MEMORY_MIB = 16 * 1024.0
IDLE_W = (55.0, 57.0, 59.0, 61.0, 63.0, 65.0)
"""Active-idle power of each node after scaling (W): above the APC outlet floor of 50 W."""
LEVELS = np.linspace(0.0, 1.0, 11)

# (label, power at active idle, 10 % … 100 % in W, ssj_ops per core) — rounded from six
# SPECpower_ssj2008 results of the shared extract (2008–2023), used when it is absent.
BUILTIN = (
    (
        "built-in A (2008 1-socket Xeon)",
        (56.7, 64, 72.2, 79.1, 88.6, 95.3, 101, 106, 111, 115, 118),
        41266.0,
    ),
    ("built-in B (2018 EPYC)", (77.5, 104, 122, 139, 157, 175, 194, 213, 233, 251, 268), 68352.8),
    ("built-in C (2019 2-socket)", (40.1, 71, 89, 106, 121, 139, 158, 178, 201, 226, 252), 77786.1),
    (
        "built-in D (2009 low-power)",
        (24.3, 29.7, 33.1, 36.4, 39.8, 43.5, 47.4, 51.4, 55.6, 59.6, 63.2),
        74971.0,
    ),
    ("built-in E (2021 EPYC)", (92.4, 139, 164, 188, 212, 238, 265, 293, 325, 360, 394), 93644.5),
    ("built-in F (2023 Xeon)", (147, 252, 305, 356, 410, 467, 530, 599, 672, 752, 835), 121250.0),
)


CAP_OVER_PEAK = 1.2
"""Power cap over hidden peak power: room above full load, so a loaded node is not over cap."""


@dataclass(frozen=True, slots=True)
class DemoNode:
    """One virtual node (a mini-PC of the testbed, see the module doc for its power).

    Attributes
    ----------
    name : str
        Node name (``mini-1`` … ``mini-6``); outlet number = index + 1.
    server : str
        The SPECpower system its curve comes from.
    points_w : tuple of float, shape (11,)
        Hidden power (W) at utilisation 0, 0.1 … 1.0 (scaled server curve).
    scale : float
        Node watts per server watt.
    speed : float
        Per-core speed relative to the median node (reference core-seconds per second).
    cores : int
    """

    name: str
    server: str
    points_w: tuple[float, ...]
    scale: float
    speed: float
    cores: int = CORES

    @property
    def power_cap_w(self) -> float:
        """The node's power cap P_cap (W): :data:`CAP_OVER_PEAK` × its hidden peak power, to
        0.1 W (its agent's ``power_cap_w``, the PDU owner's outlet map, the harness)."""
        return round(max(self.points_w) * CAP_OVER_PEAK, 1)


def _nodes(models: list[tuple[str, tuple[float, ...], float]]) -> list[DemoNode]:
    ref = float(np.median([ops for _, _, ops in models]))
    nodes = []
    for i, ((label, points, ops), idle_w) in enumerate(zip(models, IDLE_W, strict=True)):
        scale = idle_w / points[0]
        nodes.append(
            DemoNode(
                name=f"mini-{i + 1}",
                server=label,
                points_w=tuple(round(p * scale, 3) for p in points),
                scale=scale,
                speed=ops / ref,
            )
        )
    return nodes


def demo_fleet() -> tuple[list[DemoNode], str]:
    """The six nodes and one sentence saying where their curves come from.

    Returns
    -------
    nodes : list of DemoNode, length 6
    source : str
        Names the SPECpower file used, or the one that was missing and the built-in fallback.
    """
    if data_file(SPECPOWER_CSV) is None:
        return _nodes(list(BUILTIN)), (
            f"{not_found(SPECPOWER_CSV)}: using six built-in curves, each scaled to idle at "
            f"{IDLE_W[0]:g}–{IDLE_W[-1]:g} W (above the APC outlet metering floor of 50 W)"
        )
    spec = ClusterSpec(min_cores=1, max_cores=1024, hw_year_from=1990, hw_year_to=2100)
    try:
        pool = read_server_models(spec)
    except ClusterError as exc:
        return _nodes(list(BUILTIN)), f"{exc}: using six built-in curves"
    picks = np.linspace(0, len(pool) - 1, len(IDLE_W)).round().astype(int)
    models = [(pool[i].label, pool[i].points_w, pool[i].ops_per_core) for i in picks]
    return _nodes(models), (
        f"six SPECpower_ssj2008 servers from {SPECPOWER_CSV}; each curve scaled to idle at "
        f"{IDLE_W[0]:g}–{IDLE_W[-1]:g} W, not to true mini-PC power, because the simulated APC "
        "rPDU2 (like the real one) cannot meter an outlet under 50 W; speeds from ssj_ops per core"
    )
