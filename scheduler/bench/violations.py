"""An independent check of every placement against the filter predicates (AR-4, VT-2).

It does not reuse the emulator's masks or capacity arrays: it replays the placement log with its
own per-node ledger and re-evaluates taints/tolerations and nodeSelector pod by pod, so a bug in
the filter path shows up here as a violation instead of being trusted.
"""

from __future__ import annotations

from collections import defaultdict

from eams.scheduler.policies.base import Cluster, Workload

_TOL = 1e-6


def _untolerated(workload: Workload, pod: int, cluster: Cluster, node: int) -> list[str]:
    constraints = workload.profiles[int(workload.profile[pod])]
    problems = []
    for taint in cluster.meta[node].taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        matched = False
        for tol in constraints.tolerations:
            effect_ok = tol.effect in ("", taint.effect)
            key_ok = tol.key == taint.key if tol.key else tol.operator == "Exists"
            value_ok = tol.operator == "Exists" or tol.value == taint.value
            matched = matched or (effect_ok and key_ok and value_ok)
        if not matched:
            problems.append(f"untolerated taint {taint.key}={taint.value}:{taint.effect}")
    labels = cluster.meta[node].labels
    for key, value in constraints.node_selector:
        if key not in labels or labels[key] != value:
            problems.append(f"nodeSelector {key}={value} not on node")
    return problems


def check_placements(
    cluster: Cluster, workload: Workload, log: list[tuple[float, int, int, int]]
) -> list[str]:
    """Replay ``log`` (time, +1 bind / −1 completion, pod, node) and list every violation.

    Returns
    -------
    list of str
        One message per violation (empty when the run respected every predicate), naming the pod,
        the node, the time and the predicate.
    """
    cpu: dict[int, float] = defaultdict(float)
    mem: dict[int, float] = defaultdict(float)
    count: dict[int, int] = defaultdict(int)
    found: list[str] = []
    for t, sign, pod, node in log:
        cpu[node] += sign * float(workload.cpu[pod])
        mem[node] += sign * float(workload.mem_mib[pod])
        count[node] += sign
        if sign < 0:
            continue
        problems = _untolerated(workload, pod, cluster, node)
        if cpu[node] > cluster.cores[node] + _TOL:
            problems.append(f"cpu {cpu[node]:.3f} > {cluster.cores[node]:g} cores")
        if mem[node] > cluster.mem_mib[node] + _TOL:
            problems.append(f"memory {mem[node]:.0f} > {cluster.mem_mib[node]:.0f} MiB")
        if count[node] > cluster.max_pods[node]:
            problems.append(f"{count[node]} pods > {cluster.max_pods[node]} allowed")
        found.extend(
            f"t={t:.3f}s pod {workload.names[pod]} on {cluster.names[node]}: {p}" for p in problems
        )
    return found
