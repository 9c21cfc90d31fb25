"""A gap in utilisation is read by the agent's window and the meter's readings in it: a late
tick is covered exactly, a transition is bridged with the uncertainty of what was unseen."""

from __future__ import annotations

import numpy as np
import pytest

from eams.calibrate.model import LinearPowerModel, PowerCurve
from eams.calibrate.wallpower.load import NodeSeries
from eams.calibrate.wallpower.nodes import NodeModel, node_energy

MODEL = PowerCurve(LinearPowerModel(p_idle_w=50.0, p_max_w=150.0))
SPAN_S = 20.0


def _series(rows: list[tuple[float, float, float]]) -> NodeSeries:
    """rows of (t_s, metered power W or NaN, utilisation or NaN), one node."""
    rows = sorted(rows)
    t, p, u = (np.array(col, dtype=float) for col in zip(*rows, strict=True))
    return NodeSeries("n1", t, p, u, np.full(t.size, np.nan))


def _modelled(series: NodeSeries) -> tuple[float, float]:
    energy = node_energy(series, NodeModel("n1", MODEL), SPAN_S, 3.0, "B")
    return energy.modelled_wh * 3600, energy.modelled_sampling_sd_wh * 3600


def _meter(t_from: float, t_to: float, power_w: float) -> list[tuple[float, float, float]]:
    return [(t, power_w, np.nan) for t in np.arange(t_from, t_to, 0.5) + 0.25]


def test_a_late_tick_is_covered_by_the_agents_mean_exactly() -> None:
    # the agent reports every 0.5 s the mean since its previous sample; it misses 5.5–6.5 s
    # (a stalled thread), and its sample at 7.0 s is the mean over 5.0–7.0 s
    u_true = {t: 0.2 if t < 6.0 else 0.9 for t in np.arange(0.5, SPAN_S + 0.01, 0.5)}
    agent = [(t, np.nan, u) for t, u in u_true.items() if not 5.0 < t < 7.0]
    late = np.mean([u for t, u in u_true.items() if 5.0 < t <= 7.0])
    agent = [(t, p, late if t == 7.0 else u) for t, p, u in agent]
    value_j, sd_j = _modelled(_series(agent + _meter(0.0, SPAN_S, 100.0)))
    truth_j = sum(float(MODEL.power_w(u)) * 0.5 for u in u_true.values())
    assert value_j == pytest.approx(truth_j)
    assert sd_j == pytest.approx(0.0, abs=1e-9)

    # a failed read at 6.0 s restarts the window: 5.0–6.0 s is not covered, and is charged
    failed = [*agent, (6.0, np.nan, np.nan)]
    _, sd_failed_j = _modelled(_series(failed + _meter(0.0, SPAN_S, 100.0)))
    assert sd_failed_j > 0


@pytest.mark.parametrize("boot_u", [0.0, 1.0])
def test_a_wake_is_bridged_within_its_uncertainty_and_tighter_than_the_plain_charge(
    boot_u: float,
) -> None:
    # unpowered (0 W read) until 8.1 s; boots until 10.0 s while its agent's reads fail; the
    # first read at 10.0 s has no window; then 0.4 until 14 s and 0.9 after. The model's power
    # during the boot is unseen: whatever it was (u = 0 or 1), the bridge must hold it.
    meter = _meter(0.0, 8.0, 0.0) + _meter(8.0, SPAN_S, 120.0)  # 0 W read at 7.75 s, 120 W at 8.25
    blanks = [(t, np.nan, np.nan) for t in np.arange(0.5, 10.01, 0.5)]
    agent = [(t, np.nan, 0.4 if t <= 14.0 else 0.9) for t in np.arange(10.5, SPAN_S + 0.01, 0.5)]
    series = _series(meter + blanks + agent)
    value_j, sd_j = _modelled(series)
    truth_j = (
        float(MODEL.power_w(boot_u)) * (10.0 - 8.1)
        + float(MODEL.power_w(0.4)) * 4.0
        + float(MODEL.power_w(0.9)) * 6.0
    )
    assert abs(value_j - truth_j) <= 2 * sd_j
    # the plain charge: the series' whole range (0 W to P(0.9)) over the whole gap, 7.75–10.5 s
    plain_j = float(MODEL.power_w(0.9)) * (10.5 - 7.75) / np.sqrt(12)
    assert sd_j < plain_j
