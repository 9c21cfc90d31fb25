"""stress-ng: the load generator of a sweep (stress-ng(1), version 0.15 as shipped by Debian 12).

``stress-ng --cpu N --cpu-load L --metrics-brief`` runs N CPU workers that each keep their
CPU busy L % of the time. Stopped with SIGINT (or SIGHUP, or at ``--timeout``) it prints the
metrics table, whose ``cpu`` row gives bogo ops, real/usr/sys seconds, and bogo ops/s over real
time and over usr+sys time; the speed of a node (study §5.1, s_n) uses the real-time rate.
usr and sys are summed over the workers, so ``(usr + sys) / (N · real · L / 100)`` is the share
of the CPU time the workers asked for that they got: 1 on an otherwise idle node, less when
other work took the rest (:func:`load_cpu_share`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from eams.calibrate.errors import SweepError
from eams.calibrate.runners import Runner

PROGRAM = "stress-ng"
TIMEOUT_MARGIN_S = 60.0
"""Extra seconds on stress-ng's own ``--timeout``: it only matters if the sweep dies unseen."""

_METRICS_ROW = re.compile(
    r"(?:metrc|info):\s+\[\d+\]\s+cpu\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
)
_VERSION = re.compile(r"version\s+(\S+)")


def check_installed(runner: Runner) -> str:
    """Return the node's stress-ng version (e.g. ``"0.15.06"``).

    Raises
    ------
    SweepError
        If stress-ng is not on the node's PATH (with how to install it), or does not run.
    """
    if not runner.has_program(PROGRAM):
        raise SweepError(
            f"{runner.target}: stress-ng is not installed on the node (not on PATH); install it "
            "(Debian/Ubuntu: apt-get install stress-ng) and run the sweep again"
        )
    text = runner.run([PROGRAM, "--version"])
    match = _VERSION.search(text)
    return match.group(1) if match else text.strip()


def online_cpus(runner: Runner) -> int:
    """Number of online CPUs of the node (``getconf _NPROCESSORS_ONLN``).

    Raises
    ------
    SweepError
        If the answer is not a positive whole number.
    """
    text = runner.run(["getconf", "_NPROCESSORS_ONLN"]).strip()
    if not text.isdigit() or int(text) < 1:
        raise SweepError(f"{runner.target}: getconf _NPROCESSORS_ONLN answered {text!r}")
    return int(text)


def load_command(cpus: int, load_pct: int, longest_s: float) -> list[str]:
    """The stress-ng command for one level: all ``cpus`` workers at ``load_pct`` %.

    ``--timeout`` is ``longest_s`` plus :data:`TIMEOUT_MARGIN_S`, so the load ends by itself
    even when nothing is left to stop it.
    """
    timeout_s = math.ceil(longest_s + TIMEOUT_MARGIN_S)
    return [
        PROGRAM,
        "--cpu",
        str(cpus),
        "--cpu-load",
        str(load_pct),
        "--timeout",
        f"{timeout_s}s",
        "--metrics-brief",
    ]


@dataclass(frozen=True, slots=True)
class Metrics:
    """The ``cpu`` row of ``--metrics-brief``: totals over all workers.

    Attributes
    ----------
    bogo_ops : int
    real_s, usr_s, sys_s : float
        Wall time of the run, and CPU time in user and kernel mode summed over the workers (s).
    bogo_ops_per_s : float
        Over real time.
    """

    bogo_ops: int
    real_s: float
    usr_s: float
    sys_s: float
    bogo_ops_per_s: float


def metrics(output: str) -> Metrics | None:
    """The ``cpu`` metrics row of stress-ng's output, or ``None`` when there is none (killed
    before it could print one)."""
    match = _METRICS_ROW.search(output)
    if match is None:
        return None
    ops, real, usr, sys_, rate = match.groups()[:5]
    return Metrics(int(ops), float(real), float(usr), float(sys_), float(rate))


def bogo_ops_per_s(output: str) -> float | None:
    """stress-ng's total ``cpu`` bogo ops/s over real time from its metrics output, or ``None``
    when the output has no metrics row (killed before it could print one)."""
    found = metrics(output)
    return None if found is None else found.bogo_ops_per_s


def load_cpu_share(output: str, workers: int, load_pct: int) -> float | None:
    """The share of the CPU time ``workers`` workers at ``load_pct`` % asked for that they got.

    ``(usr + sys) / (workers · real · load_pct / 100)`` from the metrics row (see the module
    doc): about 1 on an otherwise idle node. ``None`` without a metrics row, a load of 0 or no
    real time.
    """
    found = metrics(output)
    asked_s = None if found is None else workers * found.real_s * load_pct / 100
    if found is None or not asked_s:
        return None
    return (found.usr_s + found.sys_s) / asked_s
