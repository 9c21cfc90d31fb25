"""What a gap in a node's utilisation holds: the agent's window and the meter's readings in it.

Modelled power is linear in utilisation (piecewise, where the calibrated curve steps at idle:
:class:`~eams.calibrate.model.PowerCurve`), which the agent reports as a mean over a window
(``eams.agent.sampler``: the own node's utilisation is the mean since its previous published
sample; a failed ``/proc/stat`` read publishes a sample without it and restarts the window,
as does an agent that starts after a boot). A gap in utilisation between samples at ``a`` and
``b`` (times in s from the run's start) is therefore read in two parts:

- **covered** — from the window's start ``c`` to ``b``, the sample at ``b`` *is* the mean:
  exact, no uncertainty. ``c`` is the last blank row of the node inside the gap (a row with
  neither utilisation nor metered power: a failed read, a restarted agent, or a missed meter
  reading, which errs on the safe side), else ``a`` when both ``a`` and ``b`` are the agent's
  own samples (a late tick: the whole gap is covered). A sample at a 0 W reading (the node had
  no power, so it ran nothing: utilisation 0) is not a window, so it covers nothing.
- **uncovered** — ``a`` to ``c``, where the agent saw nothing (a transition, while the OS is
  down): cut at the meter's readings in it. Where the meter read the node powered at both ends
  of a piece, the model's power lies on its curve, in ``[P(0), P(1)]``, whatever
  the unseen utilisation: the piece is bridged by the powered sample next to the gap (the one
  after, else the one before, else P(0.5)) and charged ``(P(1) − P(0)) · length / √12``,
  the plain charge's rule (a range over √12, the bridge inside the range) with the range the
  meter allows. A piece at one end of which the node had no power switched at an unknown
  instant inside that metered interval: half the bridge, charged ``max(P_max, bridge) ·
  length / √12``. The charges of one gap add linearly (one unknown may bias every piece
  alike).

:func:`~eams.calibrate.wallpower.energy.integrate` takes this answer where it is tighter than
its plain charge (``range · length / √12``, the sample after as the bridge).
"""

from __future__ import annotations

import math

import numpy as np

from eams.calibrate.model import PowerCurve
from eams.calibrate.wallpower.energy import GapEstimate
from eams.calibrate.wallpower.load import NodeSeries

_SQRT12 = math.sqrt(12.0)


def utilisation_gaps(series: NodeSeries, model: PowerCurve) -> GapEstimate:
    """The modelled power across each utilisation gap of ``series`` (module docstring).

    Parameters
    ----------
    series : NodeSeries
        The node's samples: metered power (W; NaN = no reading, 0 = no power), utilisation,
        energy counter.
    model : PowerCurve

    Returns
    -------
    GapEstimate
        For :func:`~eams.calibrate.wallpower.energy.integrate` over modelled power (W): the
        integral over a gap in J and its standard uncertainty in J.
    """
    t_s, power_w = series.t_s, series.power_w
    p_zero_w, p_max_w = model.power_w(0.0), model.p_max_w  # the curve's range [P(0), P(1)]
    powered_at = np.isfinite(power_w) & (power_w > 0)
    unpowered_at = power_w == 0.0
    blank_at = np.isnan(series.utilisation) & np.isnan(power_w) & np.isnan(series.energy_wh)

    def agent_sample(at_s: float) -> bool:  # not a 0 W reading standing in for utilisation
        return not bool(unpowered_at[t_s == at_s].any())

    def uncovered(start_s: float, end_s: float, on_start: bool, on_end: bool, bridge_w: float):
        inside = t_s[(t_s > start_s) & (t_s < end_s) & powered_at]
        points = np.concatenate(([start_s], inside, [end_s]))
        states = np.concatenate(([on_start], np.ones(inside.size, dtype=bool), [on_end]))
        powered = states[:-1] & states[1:]  # powered at both ends of the piece
        lengths_s = np.diff(points)
        value_j = float(np.sum(np.where(powered, bridge_w, bridge_w / 2) * lengths_s))
        range_w = np.where(powered, p_max_w - p_zero_w, max(p_max_w, bridge_w))
        sd_j = float(np.sum(range_w * lengths_s))
        return value_j, sd_j / _SQRT12

    def estimate(
        start_s: float, end_s: float, before_w: float, after_w: float
    ) -> tuple[float, float]:
        on_start, on_end = agent_sample(start_s), agent_sample(end_s)
        blanks = t_s[(t_s > start_s) & (t_s < end_s) & blank_at]
        if not on_end:
            window_s = end_s  # a 0 W reading ends the gap: it covers nothing
        elif blanks.size:
            window_s = float(blanks.max())
        else:
            window_s = start_s if on_start else end_s
        covered_j = after_w * (end_s - window_s)
        if window_s <= start_s:
            return covered_j, 0.0
        if on_end:
            bridge_w = after_w
        elif on_start:
            bridge_w = before_w
        else:
            bridge_w = float(model.power_w(0.5))
        value_j, sd_j = uncovered(start_s, window_s, on_start, on_end, bridge_w)
        return value_j + covered_j, sd_j

    return estimate
