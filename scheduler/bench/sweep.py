"""The ρ sweep: every scheduler × power-manager mode × ρ × seed of a manifest is one cell, run
on Dask workers (:mod:`.engine`) or here.

A cell builds the cluster and the workload from its seed, rescales arrivals to its ρ (over the
pods that fit some node, see :func:`schedulable_mask`), replays it with the scheduler — under
the power manager (:class:`~.power_manager.SimPowerManager`) in mode ``policy``, the nodes'
sleep state then given to the scheduler too (``Cluster.power_states``: the extender prices wakes
from it), with every node awake in mode ``none`` — and summarises it (:mod:`.metrics`). A
cell's *run* label is the scheduler's name, with ``+pm`` under the manager. Cells are
independent — each draws from generators seeded from its own seed, never from the order cells
run in or the process that runs them — so they run on any number of workers of a Dask cluster;
results are ordered by (scheduler, mode, ρ, seed), never by finishing order, and go through one
JSON round trip (the form a resumed sweep reads back from ``cells.jsonl``), so the same manifest
gives the same numbers whatever the workers and however often it was stopped (AR-8). Wall-clock
latency is kept apart.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from eams.scheduler.bench.checkpoint import CellKey
from eams.scheduler.bench.cluster import build_cluster
from eams.scheduler.bench.engine import run_unordered
from eams.scheduler.bench.manifest import Manifest
from eams.scheduler.bench.metrics import latency_summary, summarise
from eams.scheduler.bench.power_manager import SimPowerManager, SleepModel
from eams.scheduler.bench.predicates import static_masks
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.bench.summary import BAND
from eams.scheduler.bench.traces import load_workload
from eams.scheduler.bench.workload import rescale_factor, subset
from eams.scheduler.policies import load
from eams.scheduler.policies.base import Cluster, Workload

if TYPE_CHECKING:
    from distributed import Client

SLOW = ("eams", "eams-no-wakes", "eams-batch", "milp")
MANAGED = "+pm"
"""Suffix of a run label under the power manager (``most-allocated+pm``)."""


@dataclass(frozen=True)
class Cell:
    """One run of the sweep; ``manager`` is ``"none"`` or ``"policy"``."""

    scheduler: str
    rho: float
    seed: int
    manager: str = "none"

    @property
    def run(self) -> str:
        """The run label: the scheduler, ``+pm`` under the power manager."""
        return self.scheduler + (MANAGED if self.manager == "policy" else "")

    @property
    def key(self) -> CellKey:
        """(scheduler, mode, ρ, seed), as :func:`.checkpoint.cell_key` reads it from figures."""
        return (self.scheduler, self.manager, self.rho, self.seed)


def cells(manifest: Manifest) -> list[Cell]:
    """Every (scheduler, mode, ρ, seed) of ``manifest``, in result order."""
    return [
        Cell(s, r, seed, mode)
        for s in manifest.schedulers
        for mode in manifest.power_manager.modes
        for r in manifest.rho
        for seed in manifest.seeds
    ]


def schedulable_mask(cluster: Cluster, workload: Workload) -> np.ndarray:
    """(J,) bool: pods that fit at least one node of the empty cluster (static predicates too)."""
    masks = static_masks(workload.profiles, cluster.meta)[workload.profile]
    fits = (workload.cpu[:, None] <= cluster.cores[None, :] + 1e-9) & (
        workload.mem_mib[:, None] <= cluster.mem_mib[None, :] + 1e-9
    )
    return np.any(masks & fits, axis=1)


@functools.lru_cache(maxsize=4)
def _base(manifest_json: str, seed: int) -> tuple[Cluster, Workload, np.ndarray]:
    manifest = Manifest.model_validate_json(manifest_json)
    cluster = build_cluster(manifest.cluster, seed)
    workload = load_workload(manifest.trace, seed)
    return cluster, workload, schedulable_mask(cluster, workload)


def prepare(manifest: Manifest, rho: float, seed: int) -> tuple[Cluster, Workload]:
    """The cluster and the workload at offered load ``rho`` for ``seed``.

    ρ is set on the pods that can run somewhere; pods that fit no node keep their scaled arrival
    and are reported unschedulable by the replay.

    Raises
    ------
    LoadError
        If ``rho`` cannot be reached (see :func:`.workload.rescale_to_rho`).
    """
    cluster, workload, ok = _base(manifest.model_dump_json(), seed)
    fitting = workload.arrival_s[ok]
    factor = rescale_factor(subset(workload, ok), cluster.total_cores, rho)
    arrival = np.maximum((workload.arrival_s - fitting[0]) * factor, 0.0)
    return cluster, replace(workload, arrival_s=arrival)


def run_cell(manifest: Manifest, cell: Cell) -> tuple[dict, dict]:
    """Run one cell; returns (deterministic figures, latency figures)."""
    cluster, workload = prepare(manifest, cell.rho, cell.seed)
    power = None
    if cell.manager == "policy":
        spec = manifest.power_manager
        sleep = SleepModel.from_spec(manifest.cluster.power_states, cluster)
        # the nodes' sleep state in their calibrations: the market prices wakes (issue 34)
        cluster = replace(cluster, power_states=sleep.records())
        power = SimPowerManager(
            cluster,
            workload,
            static_masks(workload.profiles, cluster.meta),
            sleep,
            spec.policy,
            cell.seed,
            spec.no_sleep_nodes,
            spec.tick_s,
        )
    policy = load(cell.scheduler).make(cluster, manifest.params, cell.seed)
    try:
        replay = simulate(
            cluster,
            workload,
            policy,
            seed=cell.seed,
            batch_window_s=manifest.params.batch_window_s,
            batch_size=manifest.params.milp_max_batch,
            percentage_of_nodes_to_score=manifest.params.percentage_of_nodes_to_score,
            power=power,
        )
    finally:
        policy.close()
    label = {"scheduler": cell.scheduler, "power_manager": cell.manager, "run": cell.run}
    figures: dict = label | {"rho": cell.rho, "seed": cell.seed}
    figures |= summarise(cluster, workload, replay)
    figures["policy_stats"] = stats = dict(getattr(policy, "stats", {}))
    if stats.get("clearings"):
        figures["pods_per_clearing"] = stats["pods_cleared"] / stats["clearings"]
    figures["extender_filtered"] = replay.extender_filtered
    latency = label | {"rho": cell.rho, "seed": cell.seed}
    return figures, latency | latency_summary(replay)


def _worker(manifest_json: str, cell: Cell) -> tuple[dict, dict]:
    """:func:`run_cell` on a worker (the manifest travels as JSON), the figures in their JSON
    form."""
    figures, latency = run_cell(Manifest.model_validate_json(manifest_json), cell)
    return json.loads(json.dumps(figures, default=str)), json.loads(json.dumps(latency))


def start_order(manifest: Manifest, pending: list[Cell]) -> list[Cell]:
    """``pending`` in the order a sweep starts them: the contended band's ρ first
    (:data:`.summary.BAND`, where the verdicts are read), seed by seed, then the other ρ seed by
    seed; the slow schedulers first within a seed, the highest ρ first. A stopped sweep so has the
    band's paired comparisons over as many seeds as it ran, then whole curves seed by seed.
    The order of the results never depends on it (:func:`cells`)."""
    return sorted(
        pending,
        key=lambda c: (
            not BAND[0] <= c.rho <= BAND[1],
            manifest.seeds.index(c.seed),
            c.scheduler not in SLOW,
            -c.rho,
        ),
    )


def run_rho_sweep(
    manifest: Manifest,
    on_done: Callable[[Cell, dict, dict], None] | None = None,
    client: Client | None = None,
    done: Mapping[CellKey, tuple[dict, dict]] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Run every cell of the manifest's ρ sweep (every scheduler × mode × ρ × seed) not in
    ``done``: on ``client``'s Dask workers (:func:`.engine.open_client`), or one after the other
    in this process when ``client`` is ``None``. ``on_done(cell, figures, latency)`` is called
    here as each cell finishes (in finishing order). (Not :func:`eams.calibrate.sweep.run_sweep`,
    a node's stress-ng load sweep.)

    Cells start in :func:`start_order`.

    Parameters
    ----------
    done : mapping of (scheduler, mode, ρ, seed) → (figures, latency), optional
        Cells already run (a resumed sweep's :meth:`.checkpoint.CellLog.load`): not run again,
        their figures used as they are.

    Returns
    -------
    results, latency : lists of dicts in :func:`cells` order

    Raises
    ------
    EamsError
        What a cell raised (e.g. :class:`~.errors.LoadError`), after the cells that finished
        before it were handed to ``on_done``.
    """
    todo = cells(manifest)
    finished = dict(done or {})
    in_order = start_order(manifest, [c for c in todo if c.key not in finished])
    manifest_json = manifest.model_dump_json()

    def finish(cell: Cell, result: tuple[dict, dict]) -> None:
        finished[cell.key] = result
        if on_done:
            on_done(cell, *result)

    if client is None:
        for cell in in_order:
            finish(cell, _worker(manifest_json, cell))
    else:
        jobs = [(cell, (manifest_json, cell)) for cell in in_order]
        run_unordered(client, _worker, jobs, finish)
    return [finished[c.key][0] for c in todo], [finished[c.key][1] for c in todo]
