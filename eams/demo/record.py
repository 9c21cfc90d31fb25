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
on its node's measured curve (one ``energy`` line per pod, prefix ``energy``, issue 19,
``method`` ``utilisation_share``): the node's power as its agent published it (``power_w``:
the PDU's reading, ``source`` ``metered``, or modelled where the meter gave none) over the
pod's run (the ``ended`` line's start and finish), times the pod's share of the node's
utilisation (its cores / the node's cores over the node's utilisation, at most 1), sample and
hold between samples (:func:`measured_energy_wh`). A pod with no sample of its node in its run
falls back to the calibrated line (``method`` ``calibrated_line``). It names the three
decisions the market cleared that saved the most (:func:`market_share` says how many it cleared).
``eams explain POD --record FOLDER`` reads the folder back.

Energy *saved* by a decision is the pod's modelled energy on the node LeastAllocated would have
chosen among the same candidates minus that on the node EAMS chose (the calibrated line, study
§5.1: ΔE = (P_max − P_idle) · c/C · t, t = d/s): what the placement itself saved, before any
node slept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eams.calibrate.calfile import Calibration
from eams.calibrate.wallpower.load import parse_store_records, read_jsonl
from eams.demo.cluster import NAMESPACE
from eams.demo.live import LiveRun
from eams.scheduler.record import (
    Bound,
    Ended,
    Energy,
    PodRef,
    Recorder,
    WriterSettings,
    read_records,
)
from eams.telemetry import TelemetrySample


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


def measured_energy_wh(
    samples: Sequence[TelemetrySample], share: float, start_s: float, end_s: float
) -> tuple[float, str] | None:
    """A pod's energy on its node's measured power, Wh, and the samples' source.

    Parameters
    ----------
    samples : sequence of TelemetrySample
        The node's, in time order.
    share : float
        The pod's cores / the node's cores (its utilisation of the node at full run).
    start_s, end_s : float
        The pod's run, epoch s.

    Returns
    -------
    (float, str) or None
        Σ P_k · min(1, share / u_k) · Δt_k over the run (each sample held until the next, the
        one before the start included), in Wh, and ``metered`` when every sample used was
        metered, else ``modelled``; ``None`` when no sample with power covers the run.
    """
    usable = [s for s in samples if s.power_w is not None]
    start_ns, end_ns = int(start_s * 1e9), int(end_s * 1e9)
    before = [s for s in usable if s.measured_at_ns <= start_ns][-1:]
    held = before + [s for s in usable if start_ns < s.measured_at_ns < end_ns]
    if not held or end_ns <= start_ns:
        return None
    energy_j, sources = 0.0, set()
    for k, sample in enumerate(held):
        t0 = max(sample.measured_at_ns, start_ns)
        t1 = held[k + 1].measured_at_ns if k + 1 < len(held) else end_ns
        utilisation = sample.utilisation
        part = 1.0 if not utilisation or utilisation <= share else share / utilisation
        assert sample.power_w is not None
        energy_j += sample.power_w * part * (t1 - t0) / 1e9
        sources.add(sample.source)
    return energy_j / 3600, "metered" if sources == {"metered"} else "modelled"


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
        At most three, the largest saving first; only placements the market cleared (the
        pod bound to the node its clearing chose: its ``bound`` line ``honoured``).
    """
    saved = []
    latest = {d.pod: d for d in run.decisions}  # a pod retried after an event: its last
    records = read_records(folder).records
    ends = {r.pod.name: r for r in records if isinstance(r, Ended)}
    # a placement is the market's only where its clearing chose the node it was bound to
    # (the extender's bound line: honoured); the others were kube-scheduler's alone
    by_market = {r.pod.name for r in records if isinstance(r, Bound) and r.honoured}
    by_node: dict[str, list[TelemetrySample]] = {}
    for sample in parse_store_records(read_jsonl(run.spec)):
        by_node.setdefault(sample.node, []).append(sample)
    for series in by_node.values():
        series.sort(key=lambda s: s.measured_at_ns)
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
            end = ends.get(d.pod)
            measured = None
            if end is not None and end.started_at_s is not None:
                measured = measured_energy_wh(
                    by_node.get(d.node, []), d.cores / cores[d.node], end.started_at_s,
                    end.ended_at_s,
                )  # fmt: skip
            if measured is not None and end is not None:
                line = Energy(at_s=d.at_s, pod=pod, node=d.node, energy_wh=measured[0],
                              source=measured[1], started_at_s=end.started_at_s,
                              ended_at_s=end.ended_at_s, method="utilisation_share")  # fmt: skip
            else:
                line = Energy(at_s=d.at_s, pod=pod, node=d.node, energy_wh=energy[d.node],
                              source="modelled", method="calibrated_line")  # fmt: skip
            recorder.submit(line)
            if d.pod in by_market and d.default_node not in (None, d.node):
                # the market cleared it here, where LeastAllocated would have chosen otherwise
                saving = energy[d.default_node] - energy[d.node]
                saved.append(Saved(d.pod, d.node, d.default_node, saving, energy[d.node]))
    finally:
        recorder.close()
    return sorted((s for s in saved if s.saved_wh > 0), key=lambda s: -s.saved_wh)[:3]


def market_share(folder: Path) -> dict[str, int]:
    """How many of the run's bindings the market cleared: ``pods`` bound, ``cleared`` (bound
    to the node their clearing chose), ``cleared_nowhere`` (their clearing had no node for
    them: kube-scheduler chose alone), ``unscored`` (one node alone passed kube-scheduler's
    filters: bound without asking the extender) and ``overridden`` (bound elsewhere than
    cleared), from the record's ``bound`` lines."""
    bound = {r.pod.name: r for r in read_records(folder).records if isinstance(r, Bound)}
    values = list(bound.values())
    return {
        "pods": len(values),
        "cleared": sum(1 for b in values if b.honoured),
        "cleared_nowhere": sum(1 for b in values if b.scored and b.honoured is None),
        "unscored": sum(1 for b in values if b.scored is False),
        "overridden": sum(1 for b in values if b.honoured is False),
    }


def speed(cal: Calibration) -> float:
    """The calibrated speed (1 when the calibration has none)."""
    return cal.speed or 1.0
