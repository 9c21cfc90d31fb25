"""The demo's decision record: the EAMS run's placements, written from the demo's side.

The extender on main has no decision record of its own yet (its wiring is another issue's), so
the demo writes one :class:`~eams.scheduler.record.Placement` line per pod the live extender
scored, through :class:`~eams.scheduler.record.Recorder` (prefix ``decisions``), from what it
saw on the wire: the candidates sent to ``/prioritize`` and their 0–10 scores (the extender's
bids, prices and headroom are not on its wire: ``null``; the telemetry age is that of the
node's newest own-agent sample), the nodes that were not candidates and why
(``asleep``: tainted by the power manager; ``no_fit``: kube-scheduler's NodeResourcesFit or a
cordon; ``headroom_floor``: in the ``FailedNodes`` of the extender's ``/filter``), the
``bound`` outcome, the pod's end and the energy attributed to it on its node's calibrated
line. The power manager writes its
own lines (prefix ``power``) into the same folder. ``eams explain POD --record FOLDER`` reads
it back.

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
from eams.demo.live import Decision, LiveRun
from eams.scheduler.record import Bound, Energy, Placement, PodRef, Recorder, WriterSettings
from eams.scheduler.record.schema import Candidate, Certificate, Gated

METHOD = "best_bid"
"""The extender clears each of the demo's pods as a batch of one (no ``/pending`` announces
them): its best bid, exact."""


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


def _placement(d: Decision, i: int, label: str) -> Placement:
    cleared = max(d.scores, key=lambda n: d.scores[n])
    ranked = sorted(d.scores, key=lambda n: (n != cleared, -d.scores[n]))
    counts: dict[str, int] = {}
    for reason in d.gated.values():
        counts[reason] = counts.get(reason, 0) + 1
    return Placement(
        at_s=d.at_s,
        mode="active",
        clearing_id=f"demo-{label}-{i}",
        batch_pods=1,
        pod=PodRef(namespace=NAMESPACE, name=d.pod, uid=f"uid-{d.pod}"),
        cleared_node=cleared,
        price=None,
        bid=None,
        method=METHOD,
        fell_back=False,
        certificate=Certificate(kind="exact", bound=0.0),
        candidates=[
            Candidate(
                node=n,
                bid=None,
                price=None,
                headroom=None,
                age_s=d.age_s.get(n),
                score=d.scores[n],
            )
            for n in ranked
        ],
        candidates_total=len(d.scores) + len(d.gated),
        gated_counts=counts,
        gated=[Gated(node=n, reason=r) for n, r in d.gated.items()],
    )


def write_placements(
    run: LiveRun,
    folder: Path,
    calibrations: dict[str, Calibration],
    cores: dict[str, int],
    speedup: float,
) -> list[Saved]:
    """Write ``run``'s decisions into ``folder``; the three that saved the most energy.

    Parameters
    ----------
    run : LiveRun
        The EAMS run (its :attr:`~LiveRun.decisions`).
    folder : Path
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
    recorder = Recorder(WriterSettings(folder=folder, prefix="decisions"))
    try:
        for i, d in enumerate(run.decisions):
            placement = _placement(d, i, run.label)
            recorder.submit(placement)
            pod = placement.pod
            recorder.submit(
                Bound(
                    at_s=d.at_s,
                    pod=pod,
                    bound_node=d.node,
                    cleared_node=placement.cleared_node,
                    honoured=d.node == placement.cleared_node,
                    mode="active",
                    clearing_id=placement.clearing_id,
                    bound_at_s=d.at_s,
                )
            )
            energy = {
                n: pod_energy_wh(
                    calibrations[n], d.cores, cores[n], d.duration_ref_s / speed(calibrations[n])
                    / speedup,
                )
                for n in {d.node, d.default_node or d.node}
            }  # fmt: skip
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
