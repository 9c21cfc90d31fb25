"""VT-1 (AR-2): p99 pod scheduling latency at 1,000 nodes and 100 pods/s, behind the real
kube-scheduler.

This runs ``benchmarks/kube_pace.py`` (etcd, kube-apiserver and kube-scheduler 1.36 from
``../shared/k8s/``, the shipped scheduler configuration, the extender in active mode with its
200 ms window, and the same kube-scheduler without extenders on the same pods as the reference;
its docstring says what runs and how it is timed) and reads its verdict: creation → bind p99 ≤
250 ms at 100 pods/s offered, wherever the reference meets it on the same machine in the same
run (when it does not, both are stated). Nothing is re-implemented here; every option of
``kube_pace.py`` is taken (``--saturate-s 0`` by default here: VT-1 is the paced phase).

Usage::

    .venv/bin/python benchmarks/vt1_latency.py [--nodes 1000] [--duration-s 30] [--repeat 1]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kube_pace

AR2_P99_S = 0.25


def main(argv: list[str] | None = None) -> int:
    """Run the paced phases and print VT-1's verdict; exit 1 when nothing was measured."""
    parser = kube_pace.parser()
    parser.set_defaults(saturate_s=0.0)
    try:
        runs = kube_pace.measure(parser.parse_args(argv))
    except FileNotFoundError as error:
        print(f"VT-1: NOT measured ({error})")
        return 1
    eams = [run[f"paced {kube_pace.EAMS}"].percentile_s(99) for run in runs]
    reference = [run[f"paced {kube_pace.REFERENCE}"].percentile_s(99) for run in runs]
    p99, p99_ref = statistics.median(eams), statistics.median(reference)
    if p99_ref > AR2_P99_S:
        verdict = (
            f"not judged: the reference itself misses 250 ms here (p99 {p99_ref:.3f} s; "
            f"EAMS {p99:.3f} s)"
        )
    else:
        verdict = "met" if p99 <= AR2_P99_S else "NOT met"
    print(
        f"VT-1 (AR-2, creation -> bind p99 <= 250 ms at 100 pods/s, 200 ms window): {verdict}; "
        f"median p99 EAMS {p99:.3f} s, reference {p99_ref:.3f} s over {len(runs)} run(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
