"""VT-2 (AR-4): a property run of 10⁶ placements with 0 predicate violations.

Random scenarios (seeded): clusters of 5–60 SPECpower nodes where random node groups carry
labels and NoSchedule/NoExecute/PreferNoSchedule taints, synthetic workloads where random pod
classes carry tolerations (Equal/Exists, with and without effect) and nodeSelectors, loads ρ
from 0.3 to 1.6. Every scenario is replayed by one scheduler (cycling through the baselines),
and every placement is checked by the independent checker (``violations.check_placements``),
which replays the log with its own ledger. EAMS (through its in-process extender) and the MILP
(HiGHS) are 100–1,000× slower per pod than the scoring baselines, so they get their own,
smaller quotas (``--eams-placements``, ``--milp-placements``) on top of ``--placements``.

Usage::

    .venv/bin/python benchmarks/vt2_property.py [--placements 1000000] [--eams-placements 20000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter

import numpy as np

from eams.scheduler.bench.cluster import build_cluster, read_server_models
from eams.scheduler.bench.manifest import (
    ClusterSpec,
    NodeGroup,
    Params,
    PodClass,
    SyntheticSpec,
    TaintSpec,
    TolerationSpec,
)
from eams.scheduler.bench.simulator import simulate
from eams.scheduler.bench.violations import check_placements
from eams.scheduler.bench.workload import rescale_to_rho, synthetic
from eams.scheduler.policies import load

FAST = ("default", "most-allocated", "fcfs", "target-load-packing", "peaks")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


def scenario(seed: int, pods: int):
    """A random cluster and workload (seeded)."""
    rng = np.random.default_rng(seed)
    keys = ["dedicated", "pool", "zone"]
    groups, classes = [], []
    for _ in range(rng.integers(0, 4)):
        key, value = str(rng.choice(keys)), str(rng.choice(["a", "b"]))
        taints = [TaintSpec(key=key, value=value, effect=str(rng.choice(EFFECTS)))]
        groups.append(
            NodeGroup(fraction=float(rng.uniform(0.1, 0.4)), labels={key: value}, taints=taints)
        )
    for _ in range(rng.integers(0, 4)):
        key, value = str(rng.choice(keys)), str(rng.choice(["a", "b"]))
        tol = TolerationSpec(
            key="" if rng.random() < 0.1 else key,
            operator="Exists" if rng.random() < 0.4 else "Equal",
            value=value,
            effect=str(rng.choice(["", *EFFECTS])),
        )
        selector = {key: value} if rng.random() < 0.5 else {}
        classes.append(PodClass(fraction=0.15, tolerations=[tol], node_selector=selector))
    spec = ClusterSpec(
        nodes=int(rng.integers(5, 61)), server_models=4, min_cores=4, max_cores=64, groups=groups
    )
    cluster = build_cluster(spec, seed, MODELS)
    synth = SyntheticSpec(
        pods=pods,
        cpu_choices=[0.5, 1, 2, 4, 8, 16],
        mem_mib_per_core=float(rng.choice([0, 1024, 8192])),
    )
    workload = synthetic(synth, n_tenants=3, classes=classes, seed=seed)
    return cluster, rescale_to_rho(workload, cluster.total_cores, float(rng.uniform(0.3, 1.6)))


MODELS = read_server_models(ClusterSpec(min_cores=4, max_cores=64, hw_year_from=2008))


def run_one(args: tuple[int, str, int]) -> tuple[str, int, int, list[str]]:
    seed, name, pods = args
    cluster, workload = scenario(seed, pods)
    policy = load(name).make(cluster, Params(), seed)
    try:
        replay = simulate(cluster, workload, policy, seed=seed)
    finally:
        policy.close()
    found = check_placements(cluster, workload, replay.log)
    return name, int((replay.node >= 0).sum()), len(replay.unschedulable), found[:3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--placements", type=int, default=1_000_000)
    parser.add_argument("--eams-placements", type=int, default=20_000)
    parser.add_argument("--milp-placements", type=int, default=50_000)
    parser.add_argument("--pods", type=int, default=2000, help="pods per scenario")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    placed: Counter[str] = Counter()
    unschedulable = 0
    violations: list[str] = []
    # pods that fit no node are reported, not placed: ask for ~30 % more pods than placements
    per_fast = int(1.3 * args.placements / len(FAST))
    jobs = []
    for i, name in enumerate(FAST):
        jobs += [(100_000 * i + k, name, args.pods) for k in range(per_fast // args.pods + 1)]
    jobs += [(800_000 + k, "milp", 500) for k in range(int(1.3 * args.milp_placements) // 500 + 1)]
    jobs += [(900_000 + k, "eams", 500) for k in range(int(1.3 * args.eams_placements) // 500 + 1)]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for name, n, unsched, found in pool.imap_unordered(run_one, jobs):
            placed[name] += n
            unschedulable += unsched
            violations += found
    total = sum(placed.values())
    print(
        f"VT-2 property run: {total} placements in {len(jobs)} random scenarios, "
        f"{time.perf_counter() - started:.0f} s wall"
    )
    for name, n in placed.most_common():
        print(f"  {name:<20} {n:>9} placements")
    print(f"  unschedulable pods reported (fit no node): {unschedulable}")
    print(f"  predicate violations: {len(violations)}")
    for line in violations[:10]:
        print(f"    {line}")
    ok = not violations and sum(placed[n] for n in FAST) >= args.placements
    print(
        f"VT-2 (AR-4, 0 violations in ≥ {args.placements} placements): {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
