"""The VT-1 harness (``benchmarks/kube_pace.py``), run tiny: the real kube-apiserver and two real
kube-schedulers 1.36 (the shipped configuration with the extender, and the same without
extenders), the real extender in active mode, 20 nodes, 20 pods/s for 2 s through each of the
EAMS profile, its gate integration and the reference.

What the benchmark's figures rest on is checked here: every pod created is bound and timed by
the watch, the EAMS and gated pods went to the node the auction cleared for them, the extender
answered a ``/prioritize`` per EAMS pod and none for a gated one, and each process's CPU was
read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import kube_pace

pytestmark = pytest.mark.integration  # a real kube-apiserver, two kube-schedulers, the extender

PODS = 40


def test_the_harness_times_every_pod_and_each_went_where_the_auction_cleared_it(
    kube_binaries: Path, tmp_path: Path
) -> None:
    args = kube_pace.parser().parse_args(
        [
            "--nodes",
            "20",
            "--rate",
            "20",
            "--duration-s",
            "2",
            "--saturate-s",
            "0",
            "--drain-s",
            "30",
        ]
    )
    with kube_pace.world_up(kube_binaries, tmp_path, args.nodes, args) as world:
        run = kube_pace.one_run(world, args)
        assert world.fallback is not None and world.fallback.released() == []  # Lease held
    eams, reference = run[f"paced {kube_pace.EAMS}"], run[f"paced {kube_pace.REFERENCE}"]
    gated = run[f"paced {kube_pace.GATED}"]
    for phase in (eams, gated, reference):
        assert phase.created == phase.bound == PODS, kube_pace.describe(phase)
        assert phase.latencies_s.size == PODS and bool(np.all(phase.latencies_s > 0))
        assert phase.percentile_s(50) <= phase.percentile_s(99) < 30
        assert phase.cpu_s["kube-apiserver"] > 0 and phase.cpu_s["load generator"] > 0
    assert eams.honoured == eams.joined == PODS  # each bound on its cleared node (AR-4)
    assert gated.honoured == gated.joined == PODS  # pinned there by its release
    assert eams.prioritize_calls >= PODS and eams.cpu_s["extender"] > 0
    assert gated.prioritize_calls == 0  # kube-scheduler bound the pinned pods without asking
    assert gated.pods_cleared >= PODS and gated.pods_cleared > gated.clearings  # in batches
    assert eams.cpu_s["kube-scheduler"] > 0 and reference.cpu_s["reference kube-scheduler"] > 0
    assert "EAMS profile at 20 pods/s" in kube_pace.describe(eams)
    assert "EAMS gated (released pinned) at 20 pods/s" in kube_pace.describe(gated)
    assert set(kube_pace.ratios(gated, reference)) == {"pods/s", "kube-scheduler CPU", "system CPU"}
