"""VT-3 (AR-5): the extender is killed mid-replay; with ``ignorable: true`` every pod must still
be placed, by the default path, within 5 s of the kill.

A real ``eams extender serve`` process (uvicorn, ``tests/servers/uvicorn.py``) serves a replay
of a synthetic workload on a simulated cluster; the emulated kube-scheduler talks to it over a
socket with the shipped profile (``ignorable: true``, ``httpTimeout`` = ``--http-timeout-s``).
When ``--fault-at`` (75 %) of the pods are bound — the overloaded cluster then has a backlog
of pending pods — the extender is killed (SIGKILL), or frozen (SIGSTOP, a hung
process: every call then waits the full ``httpTimeout``) with ``--fault hang``. From then on
the emulator records, in wall-clock time, when each scheduling decision completes. Reported:
the extender failures counted, whether every pod was placed, how long (wall clock) after the
fault the pods that were pending and fitted at that instant were placed, the worst per-pod
decision time after the fault, and whether every post-fault choice equals the default
scheduler's (LeastAllocated) choice on the same state.

Usage::

    .venv/bin/python benchmarks/vt3_kill_extender.py [--fault kill|hang] [--http-timeout-s 1]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eams.scheduler.bench.cluster import build_cluster  # noqa: E402
from eams.scheduler.bench.manifest import ClusterSpec, SyntheticSpec  # noqa: E402
from eams.scheduler.bench.simulator import simulate  # noqa: E402
from eams.scheduler.bench.workload import rescale_to_rho, synthetic  # noqa: E402
from eams.scheduler.policies._kube import least_allocated  # noqa: E402
from eams.scheduler.policies.eams import ExtenderPolicy, write_calibrations  # noqa: E402
from eams.scheduler.policies.eams.extender_client import ExtenderClient  # noqa: E402
from tests.servers.uvicorn import ExtenderServer  # noqa: E402

DEADLINE_S = 5.0


class FaultyReplay(ExtenderPolicy):
    """The EAMS policy that injects the fault after ``fault_after`` binds and times decisions."""

    def __init__(self, *args, fault_after: int, fault, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fault_after = fault_after
        self.fault = fault
        self.binds = 0
        self.fault_at: float | None = None
        self.pending_at_fault: set[int] = set()
        self.placed_at: dict[int, float] = {}
        self.default_mismatch = 0
        self.decision_started = 0.0
        self.decisions_after: list[float] = []
        self.fault_pod = -1

    def filter(self, pod, candidates, state):
        self.decision_started = time.perf_counter()
        return super().filter(pod, candidates, state)

    def score(self, pod, candidates, state):
        scores = super().score(pod, candidates, state)
        if self.fault_at is not None:
            plain = least_allocated(pod, candidates, state)
            if not np.array_equal(np.floor(scores), np.floor(plain)):
                self.default_mismatch += 1
        return scores

    def bound(self, pod, node) -> None:
        super().bound(pod, node)
        now = time.perf_counter()
        self.binds += 1
        if self.fault_at is not None:
            self.placed_at[pod.index] = now
            self.decisions_after.append(now - self.decision_started)
        elif self.binds == self.fault_after:
            self.fault()
            self.fault_at = time.perf_counter()
            self.fault_pod = pod.index


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fault", choices=("kill", "hang"), default="kill")
    parser.add_argument("--http-timeout-s", type=float, default=1.0)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--pods", type=int, default=800)
    parser.add_argument("--rho", type=float, default=1.6)
    parser.add_argument(
        "--fault-at", type=float, default=0.75, help="fraction of the pods bound before the fault"
    )
    args = parser.parse_args()
    cluster = build_cluster(ClusterSpec(nodes=args.nodes, server_models=4), seed=1)
    workload = rescale_to_rho(
        synthetic(SyntheticSpec(pods=args.pods), n_tenants=3, classes=[], seed=1),
        cluster.total_cores,
        args.rho,
    )
    with tempfile.TemporaryDirectory() as tmp:
        cal = Path(tmp) / "cal"
        cal.mkdir()
        write_calibrations(cluster, cal)
        with ExtenderServer(
            Path(tmp) / "extender.log", calibrations_dir=cal, window_ms=0
        ) as server:
            pid = server.process.pid

            def fault() -> None:
                os.kill(pid, signal.SIGKILL if args.fault == "kill" else signal.SIGSTOP)

            client = ExtenderClient(server.url, timeout_s=args.http_timeout_s)
            policy = FaultyReplay(
                cluster, client, 5, 5.0, fault_after=int(args.pods * args.fault_at), fault=fault
            )
            replay = simulate(cluster, workload, policy, seed=1)
            policy.close()
            if args.fault == "hang":
                os.kill(pid, signal.SIGCONT)
    placed = replay.node >= 0
    fault_sim_s = float(replay.start_s[policy.fault_pod])
    pending = [j for j in policy.placed_at if workload.arrival_s[j] <= fault_sim_s]
    same_pass = [j for j in pending if replay.start_s[j] == fault_sim_s]
    first_pass_s = max((policy.placed_at[j] for j in same_pass), default=policy.fault_at)
    first_pass_s -= policy.fault_at
    worst = max(policy.decisions_after, default=float("nan"))
    print(
        f"VT-3 {args.fault} at bind {int(args.pods * args.fault_at)} of {args.pods} pods, "
        f"{args.nodes} nodes, "
        f"ρ = {args.rho:g}, httpTimeout {args.http_timeout_s:g} s"
    )
    print(f"  extender failures counted (ignorable): {dict(client.failures)}")
    unschedulable = len(replay.unschedulable)
    print(f"  pods placed: {int(placed.sum())}/{workload.size}, unschedulable {unschedulable}")
    print(
        f"  placements after the fault: {len(policy.placed_at)}; choices differing from the "
        f"default scheduler's: {policy.default_mismatch}"
    )
    print(f"  worst per-pod decision after the fault: {worst * 1e3:.1f} ms")
    print(
        f"  {len(pending)} pods were pending at the fault; {len(same_pass)} fitted at once and "
        f"were placed by the default path within {first_pass_s:.3f} s (wall clock) of the "
        "fault, the rest as capacity freed in simulated time"
    )
    ok = int(placed.sum()) + unschedulable == workload.size
    ok = ok and first_pass_s <= DEADLINE_S and worst <= DEADLINE_S
    ok = ok and policy.default_mismatch == 0
    print(f"VT-3 (AR-5, default placement within {DEADLINE_S:g} s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
