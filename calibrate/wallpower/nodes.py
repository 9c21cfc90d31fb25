"""Per-node metered and modelled energy of one run (the inputs of the VT-5 comparison)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from eams.calibrate.model import PowerCurve
from eams.calibrate.wallpower.counter import (
    CounterEvent,
    CounterIntegral,
    counter_ceiling_w,
    counter_energy,
)
from eams.calibrate.wallpower.energy import Gap, integrate
from eams.calibrate.wallpower.errors import RunDataError
from eams.calibrate.wallpower.load import NodeSeries, Run
from eams.calibrate.wallpower.utilisation_gaps import utilisation_gaps

_SQRT3 = math.sqrt(3.0)
EDGE_MAX_FRACTION = 0.1
"""Longest stretch at a window edge without a quantity's samples, as a fraction of the window.

Inside the window a gap is bridged between two samples; at an edge the nearest value can only
be held (extrapolated). Beyond this fraction the window does not describe the data (a window
given in the wrong time zone, an agent that stopped or started late): an error, not a guess.
"""


@dataclass(frozen=True, slots=True)
class NodeModel:
    """One node's calibrated model and the standard uncertainty of its parameters.

    Attributes
    ----------
    node : str
    model : PowerCurve
        The calibrated curve (:meth:`eams.calibrate.calfile.Calibration.model`).
    p_idle_sd_w, p_max_sd_w : float or None
        Standard uncertainty of the line's P_idle and P_max (W), e.g. a 95 % CI half-width /
        1.96; ``None`` when the calibration does not say (then it adds no uncertainty).
    p_active_idle_sd_w : float or None
        Standard uncertainty of the measured active idle A (W), which the curve uses below
        its lowest loaded level when it steps; ``None``: adds none.
    source : str
        Where the calibration came from (file path), for the report.
    """

    node: str
    model: PowerCurve
    p_idle_sd_w: float | None = None
    p_max_sd_w: float | None = None
    p_active_idle_sd_w: float | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class NodeEnergy:
    """One node in one run.

    Attributes
    ----------
    node : str
    metered_wh : float
        Energy at the wall over the window (Wh).
    method : {"counter", "power"}
        How it was obtained; ``counter_note`` says why the counter was not used.
    metered_sampling_sd_wh : float
        Standard uncertainty from sampling, gaps and counter quantisation (Wh).
    metered_reading_sd_wh : float
        Standard uncertainty from independent per-reading meter error (Wh): each reading off by
        up to ±accuracy_pct, uniformly (σ = a/√3), independently; 0 for the counter.
    modelled_wh : float
        The calibrated model applied to the measured utilisation, integrated the same way (Wh).
    modelled_sampling_sd_wh : float
    dE_dpidle_h, dE_dpmax_h, dE_dpactive_h : float
        ∂E_modelled/∂P_idle, ∂E_modelled/∂P_max and ∂E_modelled/∂A (hours): the curve's
        sensitivities (:meth:`~eams.calibrate.model.PowerCurve.sensitivities`) integrated over
        the time the node had power. On the line they are ∫(1 − u) dt, ∫u dt and 0; where the
        curve steps, the time below u1 moves from P_idle to the active idle A.
    gaps : tuple of Gap
        Gaps in the metered series (power, or counter readings when the counter is used).
    utilisation_gaps : tuple of Gap
    counter_events : tuple of CounterEvent
        Glitches, wraps and jumps of the counter, also when it was not used.
    counter_note : str or None
    modelled_samples : int
        Samples with the agent's modelled power (not wall power; reported, not used).
    power_rmse_w : float or None
        RMS of modelled − metered power at the metered samples (W), the modelled series
        linearly interpolated there.
    t_s, power_w, modelled_w : ndarray, shape (K,)
        The series for plotting (NaN = missing).
    """

    node: str
    metered_wh: float
    method: str
    metered_sampling_sd_wh: float
    metered_reading_sd_wh: float
    modelled_wh: float
    modelled_sampling_sd_wh: float
    dE_dpidle_h: float
    dE_dpmax_h: float
    dE_dpactive_h: float
    gaps: tuple[Gap, ...]
    utilisation_gaps: tuple[Gap, ...]
    counter_events: tuple[CounterEvent, ...]
    counter_note: str | None
    modelled_samples: int
    power_rmse_w: float | None
    t_s: np.ndarray
    power_w: np.ndarray
    modelled_w: np.ndarray

    @property
    def model_error_pct(self) -> float:
        """(modelled − metered) / metered × 100."""
        return (self.modelled_wh - self.metered_wh) / self.metered_wh * 100


def node_energy(
    series: NodeSeries,
    model: NodeModel,
    span_s: float,
    accuracy_pct: float,
    run: str,
    outlet_rating_w: float | None = None,
) -> NodeEnergy:
    """Metered and modelled energy of one node over ``[0, span_s]`` (see ``energy`` module doc).

    Parameters
    ----------
    series : NodeSeries
    model : NodeModel
    span_s : float
        The run's window length (s).
    accuracy_pct : float
        The meter's stated per-reading accuracy (±%).
    run : str
        Run label, for messages.
    outlet_rating_w : float, optional
        The outlet's power rating (W), bounding the counter's increments with the metered and
        calibrated power (``counter.counter_ceiling_w``).

    Raises
    ------
    RunDataError
        The node has neither metered power nor a counter, or no utilisation, in the window.
    """
    where = f"run {run}, node {series.node}"
    power = integrate(series.t_s, series.power_w, span_s)
    ceiling_w = counter_ceiling_w(
        series.power_w, p_max_w=model.model.p_max_w, rating_w=outlet_rating_w
    )
    counter = counter_energy(
        series.t_s, series.energy_wh, series.power_w, span_s, ceiling_w=ceiling_w
    )
    if power is None and not isinstance(counter, CounterIntegral):
        raise RunDataError(
            f"{where}: fewer than two metered power samples and "
            f"{counter.reason or 'no energy counter'} in the window"
        )
    # A node whose wall power reads exactly 0 W has no power (its outlet is switched off): it
    # runs nothing and its calibrated line, which holds for a running node, does not apply.
    unpowered = series.power_w == 0.0  # NaN (no reading) is not 0
    utilisation = np.where(unpowered, 0.0, series.utilisation)
    util = integrate(series.t_s, utilisation, span_s, averaged=True)
    if util is None:
        raise RunDataError(f"{where}: fewer than two utilisation samples in the window")
    sensitivity_h = []
    for part in model.model.sensitivities(series.utilisation):
        integral = integrate(series.t_s, np.where(unpowered, 0.0, part), span_s, averaged=True)
        assert integral is not None  # same validity as util
        sensitivity_h.append(integral.value / 3600)
    modelled_w = np.where(
        unpowered, 0.0, np.asarray(model.model.power_w(series.utilisation), dtype=float)
    )
    modelled = integrate(
        series.t_s,
        modelled_w,
        span_s,
        averaged=True,
        gap_estimate=utilisation_gaps(series, model.model),
    )
    assert modelled is not None  # same validity as util
    reading_sd_frac = accuracy_pct / 100 / _SQRT3
    if isinstance(counter, CounterIntegral):
        metered_wh, method = counter.energy_wh, "counter"
        sampling_sd_wh, reading_sd_wh = counter.sampling_sd_wh, 0.0
        gaps, events, note = counter.gaps, counter.events, None
    else:
        assert power is not None
        metered_wh, method = power.value / 3600, "power"
        sampling_sd_wh = power.sampling_sd / 3600
        reading_sd_wh = (
            float(np.linalg.norm(power.weights_s * power.values)) * reading_sd_frac / 3600
        )
        gaps, events, note = power.gaps, counter.events, counter.reason
    valid = np.isfinite(series.energy_wh if method == "counter" else series.power_w)
    quantity = "energy counter readings" if method == "counter" else "metered power"
    _check_edges(gaps, series.t_s[valid], span_s, quantity, where)
    _check_edges(util.gaps, series.t_s[np.isfinite(utilisation)], span_s, "utilisation", where)
    if not metered_wh > 0:
        raise RunDataError(f"{where}: metered energy is {metered_wh:g} Wh; nothing to compare")
    rmse = _rmse_w(series.t_s, series.power_w, modelled_w)
    return NodeEnergy(
        node=series.node,
        metered_wh=metered_wh,
        method=method,
        metered_sampling_sd_wh=sampling_sd_wh,
        metered_reading_sd_wh=reading_sd_wh,
        modelled_wh=modelled.value / 3600,
        modelled_sampling_sd_wh=modelled.sampling_sd / 3600,
        dE_dpidle_h=sensitivity_h[0],
        dE_dpmax_h=sensitivity_h[1],
        dE_dpactive_h=sensitivity_h[2],
        gaps=gaps,
        utilisation_gaps=util.gaps,
        counter_events=events,
        counter_note=note,
        modelled_samples=series.modelled_samples,
        power_rmse_w=rmse,
        t_s=series.t_s,
        power_w=series.power_w,
        modelled_w=modelled_w,
    )


def _check_edges(
    gaps: tuple[Gap, ...], t_valid_s: np.ndarray, span_s: float, quantity: str, where: str
) -> None:
    """Raise when a gap at an edge of the window exceeds :data:`EDGE_MAX_FRACTION` of it."""
    for gap in gaps:
        at_start = gap.start_s <= 0.0 and gap.end_s == t_valid_s[0]
        at_end = gap.end_s >= span_s and gap.start_s == t_valid_s[-1]
        if (at_start or at_end) and gap.length_s > EDGE_MAX_FRACTION * span_s:
            raise RunDataError(
                f"{where}: no {quantity} in {gap.start_s:.1f}–{gap.end_s:.1f} s, at the "
                f"{'start' if at_start else 'end'} of the {span_s:.1f} s window (over "
                f"{EDGE_MAX_FRACTION:.0%} of it, too long to extrapolate): fit the window to "
                "the run, or check that node's agent"
            )


def _rmse_w(t_s: np.ndarray, metered_w: np.ndarray, modelled_w: np.ndarray) -> float | None:
    """RMS of modelled − metered power at the metered samples, the modelled series
    interpolated there (the two may come from different agents, at other instants)."""
    met, mod = np.isfinite(metered_w), np.isfinite(modelled_w)
    if met.sum() == 0 or mod.sum() < 2:
        return None
    at = t_s[met]
    inside = (at >= t_s[mod][0]) & (at <= t_s[mod][-1])
    if not inside.any():
        return None
    model_at = np.interp(at[inside], t_s[mod], modelled_w[mod])
    return float(np.sqrt(np.mean((model_at - metered_w[met][inside]) ** 2)))


def run_energy(
    run: Run,
    models: dict[str, NodeModel],
    accuracy_pct: float,
    outlet_rating_w: float | None = None,
) -> dict[str, NodeEnergy]:
    """:func:`node_energy` of every node of ``run`` (in node-name order).

    Raises
    ------
    RunDataError
        From :func:`node_energy`.
    KeyError
        A node without a model (the caller checks the fleet first).
    """
    return {
        name: node_energy(
            series, models[name], run.duration_s, accuracy_pct, run.label, outlet_rating_w
        )
        for name, series in run.nodes.items()
    }
