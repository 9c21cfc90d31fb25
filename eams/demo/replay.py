"""Demo stage 3, playing: a planned run on the virtual nodes, in compressed real time.

The harness's replay log (binds and completions, trace time) is played on the virtual nodes:
at each instant every node's load becomes its allocated cores over its cores. The PDU simulator
follows the loads; the run's agents (started around the play by :mod:`eams.demo.run`) meter
every outlet over SNMP, measure each node's utilisation from its virtual ``/proc/stat``, and
write JSONL and push to the extender. One trace second lasts ``1 / speedup`` real seconds;
power is unchanged, so the energy measured at the wall is the trace's energy divided by
``speedup``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import numpy as np

from eams.calibrate.wallpower.spec import RunSpec
from eams.demo.testbed import Testbed
from eams.demo.workload import PlannedRun
from eams.scheduler.policies.base import Workload


@dataclass(frozen=True, slots=True)
class PlayedRun:
    """Where a played run's telemetry is and which window and work belong to it.

    Attributes
    ----------
    label : str
    telemetry_dir : Path
        ``NODE.jsonl`` files of every agent.
    start_ns, end_ns : int
        The played window, epoch ns (wall clock).
    work_core_s : float
        Reference core-seconds of the pods completed.
    """

    label: str
    telemetry_dir: Path
    start_ns: int
    end_ns: int
    work_core_s: float

    @property
    def spec(self) -> RunSpec:
        """The run for the wall-power check, built directly: the output folder may hold a
        ``,`` or ``?`` that a SPEC string would split on. Its text is the equivalent
        ``jsonl:DIR?start=..&end=..&work_core_s=..&label=..`` (shown in the report)."""
        window = f"start={self.start_ns / 1e9:.6f}&end={self.end_ns / 1e9:.6f}"
        return RunSpec(
            text=f"jsonl:{self.telemetry_dir}?{window}&work_core_s={self.work_core_s:.6f}"
            f"&label={self.label}",
            kind="jsonl",
            paths=tuple(sorted(self.telemetry_dir.glob("*.jsonl"))),
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            work_core_s=self.work_core_s,
            label=self.label,
        )


def play(
    testbed: Testbed,
    planned: PlannedRun,
    workload: Workload,
    speedup: float,
    tick: Callable[[float], None],
) -> tuple[int, int]:
    """Drive the virtual nodes through ``planned``'s log; returns the wall window (epoch ns).

    Parameters
    ----------
    testbed : Testbed
    planned : PlannedRun
    workload : Workload
        The pods the log refers to (their cpu requests).
    speedup : float
        Trace seconds per real second, > 0.
    tick : callable
        Called with the fraction of the run played (0–1) at every instant.
    """
    cores = np.array([n.spec.cores for n in testbed.nodes], dtype=float)
    alloc = np.zeros(len(testbed.nodes))
    makespan_s = float(planned.replay.makespan_s) or 1.0
    start_ns, start = time.time_ns(), time.monotonic()
    for instant, events in groupby(planned.replay.log, key=lambda e: e[0]):
        delay = start + instant / speedup - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for _, sign, pod, node in events:
            alloc[node] += sign * workload.cpu[pod]
        for node, load in zip(testbed.nodes, alloc / cores, strict=True):
            node.set_load(load)
        tick(instant / makespan_s)
    delay = start + makespan_s / speedup - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    for node in testbed.nodes:
        node.set_load(0.0)
    return start_ns, time.time_ns()
