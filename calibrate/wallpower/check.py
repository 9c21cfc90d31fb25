"""The VT-5 comparison: metered vs modelled saving of run B over run A, with its uncertainty.

Study §9, VT-5: "Metered saving within ±3 points of model". Saving S = 1 − e_B/e_A, where e is
a run's energy normalised by (in this order of preference):

1. the work it completed (both SPECs give ``work_core_s``): energy per unit of work;
2. its duration, when the windows differ by more than :data:`SAME_LENGTH_TOL` and no work is
   given: mean power (a run that is merely longer is not charged for it);
3. nothing (same-length windows): total energy.

The same normaliser is used for the metered and the modelled saving, so it cancels in their
difference D = S_metered − S_modelled. PASS when |D| ≤ tolerance (3 points).

Uncertainty (standard, k = 1; the report draws ±2σ), propagated linearly, terms independent:

- *meter gain*, correlated: the stated ``accuracy_pct`` ±a is taken as a uniform bound of a
  per-outlet gain error (σ = a/√3) that is the same for every reading of that outlet, in both
  runs (same PDU, same outlets). It cancels in e_B/e_A except through shifts of the energy
  shares f_n = E_n/E: σ_S = (1 − S)·σ_g·√Σ(f_Bn − f_An)².
- *meter readings*, uncorrelated: the same bound applied to every reading independently
  (σ = a/√3 per reading); averages down over many readings. Assuming both fully present is
  conservative.
- *sampling*: unresolved variation between samples, gaps, counter quantisation
  (see :mod:`eams.calibrate.wallpower.energy`).
- *calibration* (modelled saving only): each node's P_idle and P_max standard uncertainty,
  correlated between runs (same model).

Per-node model error: (E_modelled − E_metered)/E_metered per run, and each node's share of D:
D minus D recomputed with that node's modelled energy replaced by its metered energy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from eams.calibrate.wallpower.counter import CounterEvent
from eams.calibrate.wallpower.energy import Gap
from eams.calibrate.wallpower.errors import RunMismatchError
from eams.calibrate.wallpower.load import Run
from eams.calibrate.wallpower.nodes import NodeEnergy, NodeModel, run_energy

TOLERANCE_PTS = 3.0
SAME_LENGTH_TOL = 0.01
MODEL_ERROR_WARN_PCT = 5.0
MODEL_ERROR_MIN_RUN_PCT = 0.5
"""A node's model error over :data:`MODEL_ERROR_WARN_PCT` of its own energy is flagged only when
it is also at least this share of its run's metered energy (%): a node that drew little (asleep
or off most of the run) can be off by a large fraction of almost nothing, which moves the
run's saving by less than this many hundredths."""
_SQRT3 = math.sqrt(3.0)
_BRIDGE = {
    "power": "metered power",
    "restart": "counter restarted at 0",
    "mean": "the counter's mean power",
}


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run's totals.

    Attributes
    ----------
    label : str
    spec : str
    start_ns, end_ns : int
        The window, epoch ns (UTC).
    duration_s : float
    work_core_s : float or None
    normaliser : float
        What energy (Wh) is divided by: work in core-hours (giving J/core-s), duration in
        hours (giving W), or 1.
    nodes : dict of str to NodeEnergy
    metered_wh, modelled_wh : float
        Totals over all nodes (Wh).
    """

    label: str
    spec: str
    start_ns: int
    end_ns: int
    duration_s: float
    work_core_s: float | None
    normaliser: float
    nodes: dict[str, NodeEnergy]
    metered_wh: float
    modelled_wh: float

    @property
    def metered_normalised(self) -> float:
        """Metered energy over the normaliser (J/core-s, W or Wh; see ``SavingCheck.unit``)."""
        return self.metered_wh / self.normaliser

    @property
    def modelled_normalised(self) -> float:
        """Modelled energy over the normaliser (same unit)."""
        return self.modelled_wh / self.normaliser


@dataclass(frozen=True, slots=True)
class SavingCheck:
    """The VT-5 check of run B's saving over run A, metered against modelled: the verdict and
    everything a reader needs to see why.

    Attributes
    ----------
    a, b : RunResult
    normalised_by : {"work", "time", "none"}
    unit : str
        Unit of the normalised energy (``J/core-s``, ``W``, ``Wh``).
    saving_metered, saving_modelled : float
        Fractions (0.12 = 12 %).
    sd_metered, sd_modelled : dict of str to float
        Standard uncertainty of each saving by component (fractions).
    difference_pts, sd_difference_pts : float
        D = (S_metered − S_modelled) × 100 and its standard uncertainty (points).
    tolerance_pts : float
    passed : bool
        |D| ≤ tolerance.
    resolvable : bool
        2σ_D ≤ tolerance: the measurement can tell a pass from a fail.
    disagreement_pts : dict of str to float
        Each node's share of D (points).
    warnings : tuple of str
    accuracy_pct : float
    """

    a: RunResult
    b: RunResult
    normalised_by: str
    unit: str
    saving_metered: float
    saving_modelled: float
    sd_metered: dict[str, float]
    sd_modelled: dict[str, float]
    difference_pts: float
    sd_difference_pts: float
    tolerance_pts: float
    passed: bool
    resolvable: bool
    disagreement_pts: dict[str, float]
    warnings: tuple[str, ...]
    accuracy_pct: float

    @property
    def verdict(self) -> str:
        """``PASS`` or ``FAIL``."""
        return "PASS" if self.passed else "FAIL"


def _check_fleet(a: Run, b: Run, models: dict[str, NodeModel]) -> None:
    only_a, only_b = sorted(set(a.nodes) - set(b.nodes)), sorted(set(b.nodes) - set(a.nodes))
    if only_a or only_b:
        parts = [f"node(s) {', '.join(only_a)} only in run {a.label}"] if only_a else []
        parts += [f"node(s) {', '.join(only_b)} only in run {b.label}"] if only_b else []
        raise RunMismatchError(
            "; ".join(parts) + ": both runs must cover the same nodes (a node without telemetry "
            "is unknown, not 0 W)"
        )
    missing = sorted(set(a.nodes) - set(models))
    if missing:
        raise RunMismatchError(f"no calibration for node(s) {', '.join(missing)}")


def _normalisers(a: Run, b: Run) -> tuple[str, str, float, float, list[str]]:
    notes = []
    if (a.work_core_s is None) != (b.work_core_s is None):
        given = a if a.work_core_s is not None else b
        raise RunMismatchError(
            f"only run {given.label} states work_core_s; give it for both runs or for neither"
        )
    differ = abs(a.duration_s - b.duration_s) > SAME_LENGTH_TOL * max(a.duration_s, b.duration_s)
    if a.work_core_s is not None and b.work_core_s is not None:
        if differ:
            notes.append(
                f"runs differ in length ({a.duration_s:.1f} s vs {b.duration_s:.1f} s): "
                "compared per unit of work"
            )
        return "work", "J/core-s", a.work_core_s / 3600, b.work_core_s / 3600, notes
    if differ:
        notes.append(
            f"runs differ in length ({a.duration_s:.1f} s vs {b.duration_s:.1f} s) and no "
            "work_core_s was given: compared per unit time (mean power), which assumes both "
            "runs did the same work per second"
        )
        return "time", "W", a.duration_s / 3600, b.duration_s / 3600, notes
    return "none", "Wh", 1.0, 1.0, notes


def _saving(e_a: float, e_b: float, ratio: float) -> float:
    return 1.0 - ratio * e_b / e_a


def _run_result(run: Run, nodes: dict[str, NodeEnergy], normaliser: float) -> RunResult:
    return RunResult(
        label=run.label,
        spec=run.spec.text,
        start_ns=run.start_ns,
        end_ns=run.end_ns,
        duration_s=run.duration_s,
        work_core_s=run.work_core_s,
        normaliser=normaliser,
        nodes=nodes,
        metered_wh=sum(n.metered_wh for n in nodes.values()),
        modelled_wh=sum(n.modelled_wh for n in nodes.values()),
    )


def _gap_finding(gaps: tuple[Gap, ...], quantity: str, bridge: str) -> list[str]:
    if not gaps:
        return []
    total = sum(g.length_s for g in gaps)
    spans = ", ".join(f"{g.start_s:.1f}–{g.end_s:.1f} s" for g in gaps[:4])
    more = f" and {len(gaps) - 4} more" if len(gaps) > 4 else ""
    return [f"{len(gaps)} gap(s) in {quantity}, {total:.1f} s ({spans}{more}); {bridge}"]


def _node_findings(n: NodeEnergy) -> list[str]:
    # short: how gaps are bridged and charged is the report's "how this was computed"
    bridge = "the counter kept counting" if n.method == "counter" else "bridged linearly"
    out = _gap_finding(n.gaps, "metered data", bridge)
    out += _gap_finding(
        n.utilisation_gaps,
        "utilisation (so in modelled power)",
        "read by the agent's window and the meter's readings in it",
    )
    out += [_counter_finding(e, used=n.method == "counter") for e in n.counter_events]
    if n.counter_note:
        out.append(n.counter_note)
    return out


def _power(w: float) -> str:
    for unit, scale in (("GW", 1e9), ("MW", 1e6), ("kW", 1e3)):
        if abs(w) >= scale:
            return f"{w / scale:.3g} {unit}"
    return f"{w:.3g} W"


def _counter_finding(e: CounterEvent, *, used: bool) -> str:
    """One sentence on a counter event (``counter`` module doc)."""
    at = f"energy counter {'went back' if e.kind == 'wrap' else e.kind} at {e.at_s:.1f} s"
    implied = "" if e.implied_w is None else f"the step would mean {_power(e.implied_w)}"
    if implied and e.ceiling_w is not None:
        implied += f" where the outlet draws at most {_power(e.ceiling_w)}"
    if e.kind == "glitch":
        what = (
            f"{at}: {e.readings} reading(s) off its course ({e.before_wh:g} → {e.after_wh:g} Wh, "
            f"then back to {e.before_wh + e.bridged_wh:g}; "
            f"{implied or 'a counter does not go back and return'}): "
            "ignored, not counted"
        )
    elif e.kind == "wrap":
        what = f"{at} from {e.before_wh:g} to {e.after_wh:g} Wh (wrap or reset)"
    else:
        what = (
            f"{at} from {e.before_wh:g} to {e.after_wh:g} Wh ({implied}) and carried on from "
            "there: the leap is not counted"
        )
    if not used:
        return f"{what}; the counter was not used"
    if e.kind == "glitch":
        return f"{what}; the counter's increment across it counts"
    return f"{what}; stitched, {e.bridged_wh:.4g} Wh credited across it ({_BRIDGE[e.how]})"


def _places(places: list[tuple[str, str]], every: dict[str, set[str]]) -> str:
    runs: dict[str, list[str]] = {}
    for run, node in places:
        runs.setdefault(run, []).append(node)
    if runs.keys() == every.keys() and all(set(runs[r]) == every[r] for r in runs):
        return "every node, both runs"  # the same finding everywhere: say so, briefly
    return "; ".join(
        f"run {run}, every node"
        if set(nodes) == every[run]
        else f"run {run}, node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}"
        for run, nodes in runs.items()
    )


def model_error_flagged(node: NodeEnergy, run_metered_wh: float) -> bool:
    """Whether ``node``'s model error is a finding: over :data:`MODEL_ERROR_WARN_PCT` of its
    metered energy and at least :data:`MODEL_ERROR_MIN_RUN_PCT` of its run's
    (``run_metered_wh``)."""
    error_wh = abs(node.modelled_wh - node.metered_wh)
    return (
        abs(node.model_error_pct) > MODEL_ERROR_WARN_PCT
        and error_wh >= MODEL_ERROR_MIN_RUN_PCT / 100 * run_metered_wh
    )


def unflagged_model_errors(run: RunResult) -> list[str]:
    """One sentence per node of ``run`` whose relative model error is over
    :data:`MODEL_ERROR_WARN_PCT` but not flagged (:func:`model_error_flagged`): its absolute
    error and why it does not count."""
    out = []
    for n in run.nodes.values():
        if abs(n.model_error_pct) <= MODEL_ERROR_WARN_PCT or model_error_flagged(n, run.metered_wh):
            continue
        error_wh = n.modelled_wh - n.metered_wh
        out.append(
            f"{n.node}: model error {n.model_error_pct:+.1f} % is not flagged: it is "
            f"{error_wh:+.4f} Wh of the node's {n.metered_wh:.3f} Wh, "
            f"{abs(error_wh) / run.metered_wh * 100:.2f} % of the run's {run.metered_wh:.2f} Wh "
            f"(a node's error is flagged from {MODEL_ERROR_MIN_RUN_PCT:g} % of its run's energy): "
            "a large fraction of a small energy, as of a node asleep or off most of the run, "
            "hardly moves the saving."
        )
    return out


def _warnings(results: tuple[RunResult, RunResult]) -> list[str]:
    """Findings per node; one finding shared by several nodes is listed once, naming them."""
    where: dict[str, list[tuple[str, str]]] = {}
    every = {run.label: set(run.nodes) for run in results}
    for run in results:
        for n in run.nodes.values():
            for finding in _node_findings(n):
                where.setdefault(finding, []).append((run.label, n.node))
    out = [f"{_places(places, every)}: {finding}" for finding, places in where.items()]
    for run in results:
        large = [
            f"{n.node} {n.model_error_pct:+.1f} % ({n.modelled_wh - n.metered_wh:+.3f} Wh)"
            for n in run.nodes.values()
            if model_error_flagged(n, run.metered_wh)
        ]
        if large:
            out.append(
                f"run {run.label}: model error over ±{MODEL_ERROR_WARN_PCT:g} % of metered "
                f"energy: {', '.join(large)}"
            )
    return out


def check_runs(
    a: Run,
    b: Run,
    models: dict[str, NodeModel],
    *,
    accuracy_pct: float = 3.0,
    tolerance_pts: float = TOLERANCE_PTS,
    outlet_rating_w: float | None = None,
) -> SavingCheck:
    """Compare the metered and the modelled saving of run ``b`` over run ``a`` (VT-5).

    Parameters
    ----------
    a, b : Run
        The baseline run (e.g. default scoring) and the candidate (e.g. EAMS).
    models : dict of str to NodeModel
        Every node's calibrated model.
    accuracy_pct : float
        The meter's stated accuracy (±%), > 0; APC rPDU2 states ±3 % (hence the default).
    tolerance_pts : float
        VT-5 tolerance in percentage points.
    outlet_rating_w : float, optional
        The PDU outlets' power rating (W): no counter increment implying more is trusted
        (besides twice the most each node was metered or calibrated at).

    Returns
    -------
    SavingCheck

    Raises
    ------
    RunMismatchError
        A node missing in one run, a node without calibration, work given for one run only.
    RunDataError
        A node without usable metered power or utilisation.
    """
    _check_fleet(a, b, models)
    how, unit, n_a, n_b, notes = _normalisers(a, b)
    ratio = n_a / n_b
    res_a = _run_result(a, run_energy(a, models, accuracy_pct, outlet_rating_w), n_a)
    res_b = _run_result(b, run_energy(b, models, accuracy_pct, outlet_rating_w), n_b)
    names = list(res_a.nodes)
    pairs = [(res_a.nodes[n], res_b.nodes[n]) for n in names]
    ea_met, eb_met = res_a.metered_wh, res_b.metered_wh
    ea_mod, eb_mod = res_a.modelled_wh, res_b.modelled_wh
    s_met, s_mod = _saving(ea_met, eb_met, ratio), _saving(ea_mod, eb_mod, ratio)

    shift = np.array([nb.metered_wh / eb_met - na.metered_wh / ea_met for na, nb in pairs])
    sd_gain = (1 - s_met) * accuracy_pct / 100 / _SQRT3 * float(np.linalg.norm(shift))

    def combined(attr: str, e_a: float, e_b: float) -> float:
        # independent per node and run: ∂S/∂E_Bn = −R/E_A, ∂S/∂E_An = R·E_B/E_A²
        terms = [
            math.hypot(ratio / e_a * getattr(nb, attr), ratio * e_b / e_a**2 * getattr(na, attr))
            for na, nb in pairs
        ]
        return float(np.linalg.norm(terms))

    sd_met = {
        "meter_gain": sd_gain,
        "meter_readings": combined("metered_reading_sd_wh", ea_met, eb_met),
        "sampling": combined("metered_sampling_sd_wh", ea_met, eb_met),
    }
    calibration_terms = []
    for name, (na, nb) in zip(names, pairs, strict=True):
        model = models[name]
        for sd, da, db in (
            (model.p_idle_sd_w, na.dE_dpidle_h, nb.dE_dpidle_h),
            (model.p_max_sd_w, na.dE_dpmax_h, nb.dE_dpmax_h),
            (model.p_active_idle_sd_w, na.dE_dpactive_h, nb.dE_dpactive_h),
        ):
            if sd is not None:
                calibration_terms.append(ratio * (eb_mod * da / ea_mod**2 - db / ea_mod) * sd)
    sd_mod = {
        "calibration": float(np.linalg.norm(calibration_terms)),
        "sampling": combined("modelled_sampling_sd_wh", ea_mod, eb_mod),
    }
    diff_pts = (s_met - s_mod) * 100
    sd_diff_pts = (
        math.sqrt(sum(v**2 for v in sd_met.values()) + sum(v**2 for v in sd_mod.values())) * 100
    )
    disagreement = {}
    for name, (na, nb) in zip(names, pairs, strict=True):
        s_mod_swapped = _saving(
            ea_mod - na.modelled_wh + na.metered_wh, eb_mod - nb.modelled_wh + nb.metered_wh, ratio
        )
        disagreement[name] = diff_pts - (s_met - s_mod_swapped) * 100
    if 2 * sd_diff_pts > tolerance_pts:
        notes.append(
            f"the uncertainty of the difference (±{2 * sd_diff_pts:.1f} points at 2σ) exceeds "
            f"the ±{tolerance_pts:g}-point tolerance: this measurement cannot resolve VT-5"
        )
    return SavingCheck(
        a=res_a,
        b=res_b,
        normalised_by=how,
        unit=unit,
        saving_metered=s_met,
        saving_modelled=s_mod,
        sd_metered=sd_met,
        sd_modelled=sd_mod,
        difference_pts=diff_pts,
        sd_difference_pts=sd_diff_pts,
        tolerance_pts=tolerance_pts,
        passed=abs(diff_pts) <= tolerance_pts,
        resolvable=2 * sd_diff_pts <= tolerance_pts,
        disagreement_pts=disagreement,
        warnings=tuple(notes + _warnings((res_a, res_b))),
        accuracy_pct=accuracy_pct,
    )
