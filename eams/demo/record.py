"""The demo's side of the decision record: outcomes to the extender, energy to the record.

The live extender records its own decisions (``--record record/<band>/eams+pm --no-annotate``:
one ``placement`` line per pod it cleared, with the candidates' bids, prices, headroom and
telemetry age, the method and its certificate). No API server runs here, so its pod watch has
nothing to watch: the demo sends it what the watch would have seen, through the watch's twin
``POST /pending`` (:meth:`~eams.demo.services.ExtenderServer.post_pods`): each EAMS pod
once bound (:func:`~eams.demo.cluster.bound_pod`: ``spec.nodeName``, the ``PodScheduled``
condition) and once ended (:func:`~eams.demo.cluster.ended_pod`: ``Succeeded``, its start
and finish); the extender's outcome join writes the ``bound`` and ``ended`` lines. The
power manager writes its own lines (prefix ``power``).

What only the demo knows is the energy: :func:`write_energy` attributes each EAMS pod's energy
on its node's calibrated line (one ``energy`` line per pod, prefix ``energy``, issue 19) and
names the three decisions that saved the most. ``eams explain POD --record FOLDER`` reads the
folder back.

Energy *saved* by a decision is the pod's modelled energy on the node LeastAllocated would have
chosen among the same candidates minus that on the node EAMS chose (the calibrated line, study
§5.1: ΔE = (P_max − P_idle) · c/C · t, t = d/s): what the placement itself saved, before any
node slept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eams.calibrate.calfile import Calibration
from eams.demo.cluster import NAMESPACE
from eams.demo.live import LiveRun
from eams.scheduler.record import Energy, PodRef, Recorder, WriterSettings


@dataclass(frozen=True)
class Saved:
    """One decision and the energy it saved against LeastAllocated's choice (Wh, real time)."""

    pod: str
    node: str
    default_node: str
    saved_wh: float
    energy_wh: float


def pod_energy_wh(cal: Calibration, cores: float, node_cores: int, runtime_s: float) -> float:
    """The pod's marginal energy on a node's calibrated line (Wh), study §5.1."""
    return (cal.p_max_w - cal.p_idle_w) * cores / node_cores * runtime_s / 3600


def write_energy(
    run: LiveRun,
    folder: Path,
    calibrations: dict[str, Calibration],
    cores: dict[str, int],
    speedup: float,
) -> list[Saved]:
    """Write the energy attributed to each of ``run``'s scored pods into ``folder``; the
    three decisions that saved the most energy.

    Parameters
    ----------
    run : LiveRun
        The EAMS run (its :attr:`~LiveRun.decisions`: the node bound, LeastAllocated's).
    folder : Path
        The run's record folder (the extender's ``decisions`` lines are beside).
    calibrations : dict of str to Calibration
        By node.
    cores : dict of str to int
        Every node's cores.
    speedup : float

    Returns
    -------
    list of Saved
        At most three, the largest saving first.
    """
    saved = []
    latest = {d.pod: d for d in run.decisions}  # a pod retried after an event: its last
    recorder = Recorder(WriterSettings(folder=folder, prefix="energy"))
    try:
        for d in latest.values():
            energy = {
                n: pod_energy_wh(
                    calibrations[n], d.cores, cores[n], d.duration_ref_s / speed(calibrations[n])
                    / speedup,
                )
                for n in {d.node, d.default_node or d.node}
            }  # fmt: skip
            pod = PodRef(namespace=NAMESPACE, name=d.pod, uid=f"uid-{d.pod}")
            recorder.submit(
                Energy(at_s=d.at_s, pod=pod, node=d.node, energy_wh=energy[d.node],
                       source="modelled")
            )  # fmt: skip
            if d.default_node is not None:
                saving = energy[d.default_node] - energy[d.node]
                saved.append(Saved(d.pod, d.node, d.default_node, saving, energy[d.node]))
    finally:
        recorder.close()
    return sorted(saved, key=lambda s: -s.saved_wh)[:3]


def speed(cal: Calibration) -> float:
    """The calibrated speed (1 when the calibration has none)."""
    return cal.speed or 1.0
